-- courier schema 1: streams with their lease, immutable events, their
-- delivery state, the operator history, and the token counter.
CREATE TABLE streams (
	name           TEXT    PRIMARY KEY,
	last_seq       INTEGER NOT NULL DEFAULT 0,
	lease_owner    TEXT    NOT NULL DEFAULT '',
	lease_token    INTEGER NOT NULL DEFAULT 0,
	lease_expires  INTEGER NOT NULL DEFAULT 0,
	lease_released INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE tokens (
	one  INTEGER PRIMARY KEY CHECK (one = 1),
	last INTEGER NOT NULL
);
INSERT INTO tokens (one, last) VALUES (1, 0);
CREATE TABLE events (
	id          TEXT    PRIMARY KEY,
	stream      TEXT    NOT NULL,
	seq         INTEGER NOT NULL,
	payload     BLOB    NOT NULL,
	accepted_at INTEGER NOT NULL,
	UNIQUE (stream, seq)
);
CREATE TABLE deliveries (
	id           TEXT    PRIMARY KEY REFERENCES events (id),
	stream       TEXT    NOT NULL,
	seq          INTEGER NOT NULL,
	state        INTEGER NOT NULL,
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_at      INTEGER NOT NULL,
	reason       INTEGER NOT NULL DEFAULT 0,
	last_attempt INTEGER NOT NULL DEFAULT 0,
	last_status  INTEGER NOT NULL DEFAULT 0,
	last_detail  TEXT    NOT NULL DEFAULT '',
	last_at      INTEGER NOT NULL DEFAULT 0,
	settled_at   INTEGER NOT NULL DEFAULT 0,
	budget_from  INTEGER NOT NULL
);
CREATE INDEX deliveries_stream_seq ON deliveries (stream, seq);
CREATE TABLE actions (
	id           TEXT    NOT NULL REFERENCES events (id),
	n            INTEGER NOT NULL,
	kind         INTEGER NOT NULL,
	operator     TEXT    NOT NULL,
	at           INTEGER NOT NULL,
	token        INTEGER NOT NULL,
	attempts     INTEGER NOT NULL,
	reason       INTEGER NOT NULL,
	last_attempt INTEGER NOT NULL,
	last_status  INTEGER NOT NULL,
	last_detail  TEXT    NOT NULL,
	PRIMARY KEY (id, n)
);
