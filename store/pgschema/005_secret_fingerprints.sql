-- Version 5 of Toolgate's PostgreSQL store: the fingerprints of the
-- secrets the replicas sharing it sign with (HMAC-SHA256 of a fixed text
-- keyed by the secret; never the secret). A replica whose secret and
-- previous secrets match none of them refuses to start (store/secrets.go).
CREATE TABLE secret_fingerprints (
	fingerprint text PRIMARY KEY,
	recorded    bigint NOT NULL
);
