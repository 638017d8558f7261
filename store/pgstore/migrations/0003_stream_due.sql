-- courier schema 3: each stream's due instant, kept by every call that
-- changes it, so that ClaimDue reads the due streams in due order from
-- one index instead of searching every stream's records. due is NULL
-- for a stream with no pending, retry or parked record; release_until
-- is the instant its last release named, before which it is never due.
-- A parked record makes its stream due at release_until (0 here: at
-- once, as it was due before this schema).
ALTER TABLE streams ADD COLUMN due bigint, ADD COLUMN release_until bigint NOT NULL DEFAULT 0;
CREATE INDEX deliveries_waiting ON deliveries (stream, next_at) WHERE state IN (1, 2);
CREATE INDEX deliveries_parked ON deliveries (stream) WHERE state = 3;
UPDATE streams SET due = CASE
	WHEN EXISTS (SELECT 1 FROM deliveries d WHERE d.stream = streams.name AND d.state = 3) THEN 0
	ELSE (SELECT MIN(d.next_at) FROM deliveries d WHERE d.stream = streams.name AND d.state IN (1, 2))
END;
CREATE INDEX streams_due ON streams (due, name) WHERE due IS NOT NULL;
