-- Version 1 of Toolgate's PostgreSQL store: holds, their steps, and the
-- step index. The store applies it at open, in the schema it is given
-- (default "toolgate"), under an advisory lock; schema_version records it.
--
-- Times are nanoseconds since the Unix epoch, UTC (bigint), so a hold reads
-- back exactly as it was put; to_timestamp(expires / 1e9) shows one.
-- Strings that come from outside the store (owners, tool call ids, the
-- app's replies) are bytea: text refuses a NUL byte or invalid UTF-8, and
-- a hold must be kept as given; convert_from(owner, 'UTF8') shows one.
-- keep_until is Expires plus the store's retention: the retention loop
-- deletes a row once the database's clock has passed it.

-- A step: the calls of one model response. Its assistant message is kept
-- once here, for all its holds.
CREATE TABLE steps (
	id         text PRIMARY KEY,
	message    bytea,
	keep_until bigint NOT NULL
);
CREATE INDEX steps_keep_until ON steps (keep_until);

-- A hold: one gated call waiting for (or answered by) a person.
CREATE TABLE holds (
	id            text PRIMARY KEY,
	step_id       text NOT NULL,
	position      integer NOT NULL,
	tenant        bytea NOT NULL,
	owner         bytea NOT NULL,
	-- owner_key: a hash of (tenant, owner), for the per-owner cap's index
	-- (owner ids have no length limit; an index entry has one).
	owner_key     bytea NOT NULL,
	policy        bytea NOT NULL,
	action        bytea NOT NULL,
	kind          bytea NOT NULL,
	protocol      bytea NOT NULL,
	shown         bytea,
	fingerprint   bytea NOT NULL,
	call_id       bytea NOT NULL,
	call          bytea,
	arguments     bytea,
	waiting_text  bytea NOT NULL,
	state         text NOT NULL CHECK (state IN ('waiting', 'answered', 'running', 'settled')),
	answer        bytea NOT NULL,
	answered_by   bytea NOT NULL,
	answer_values bytea,
	outcome       bytea NOT NULL,
	created       bigint,
	expires       bigint NOT NULL,
	answered_at   bigint,
	started_at    bigint,
	keep_until    bigint NOT NULL
);
CREATE INDEX holds_step ON holds (step_id, position);
-- Unsettled pages through this: its size follows what is open, not what
-- is kept.
CREATE INDEX holds_unsettled ON holds (id) WHERE state <> 'settled';
CREATE INDEX holds_waiting ON holds (owner_key, expires) WHERE state = 'waiting';
CREATE INDEX holds_keep_until ON holds (keep_until);

-- The step index: steps filed under a key (a provider's response or
-- conversation id), oldest first. The key is kept as its SHA-256.
CREATE TABLE step_index (
	key_hash   bytea NOT NULL,
	step_id    text NOT NULL,
	filed      bigint NOT NULL,
	seq        bigint GENERATED ALWAYS AS IDENTITY,
	keep_until bigint NOT NULL,
	PRIMARY KEY (key_hash, step_id)
);
CREATE INDEX step_index_keep_until ON step_index (keep_until);
