-- Version 3 of Toolgate's PostgreSQL store: the audit log, and the
-- indexes that let an operator list holds without reading the table.

-- Events appended with the change they report, waiting to be chained.
-- id is the order they were appended in; at the store clock's time then
-- (nanoseconds); event the Event as JSON, without its time. hold_id names
-- the hold whose fields the chainer fills in.
CREATE TABLE audit_pending (
	id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at      bigint NOT NULL,
	hold_id text,
	event   bytea NOT NULL
);

-- The chain: entry seq's body is its canonical JSON (seq, prev, the
-- event), hash the SHA-256 of body. at is the event's time, for exports
-- by time and for pruning.
CREATE TABLE audit_log (
	seq  bigint PRIMARY KEY,
	at   bigint NOT NULL,
	body bytea NOT NULL,
	hash bytea NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);

-- The chain's head: its one row is locked by each chain round (so rounds
-- run one after the other on every replica) and by each prune. pruned_*
-- is the last entry pruned from the chain's start: it verifies from there.
CREATE TABLE audit_head (
	id          boolean PRIMARY KEY DEFAULT true CHECK (id),
	seq         bigint NOT NULL,
	hash        bytea NOT NULL,
	pruned_seq  bigint NOT NULL,
	pruned_hash bytea NOT NULL,
	pruned_at   bigint NOT NULL
);
INSERT INTO audit_head (seq, hash, pruned_seq, pruned_hash, pruned_at) VALUES (0, '', 0, '', 0);

-- List pages through holds newest first, (coalesce(created, 0), id), by
-- one of these for each filter: every page is an index range.
CREATE INDEX holds_listed ON holds ((coalesce(created, 0)), id);
CREATE INDEX holds_open_listed ON holds ((coalesce(created, 0)), id) WHERE state <> 'settled';
CREATE INDEX holds_owner_listed ON holds (owner_key, (coalesce(created, 0)), id);
CREATE INDEX holds_action_listed ON holds (action, (coalesce(created, 0)), id);
CREATE INDEX holds_tenant_listed ON holds (tenant, (coalesce(created, 0)), id);
