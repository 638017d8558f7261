-- courier schema 1: streams with their lease, immutable events, their
-- delivery state, the operator history, and the token sequence. Text
-- keys collate as bytes ("C"), so that stream-name order is the same on
-- every server and in every backend.
CREATE SEQUENCE tokens;
CREATE TABLE streams (
	name           text    COLLATE "C" PRIMARY KEY,
	last_seq       bigint  NOT NULL DEFAULT 0,
	lease_owner    text    NOT NULL DEFAULT '',
	lease_token    bigint  NOT NULL DEFAULT 0,
	lease_expires  bigint  NOT NULL DEFAULT 0,
	lease_released boolean NOT NULL DEFAULT false
);
CREATE TABLE events (
	id          text   COLLATE "C" PRIMARY KEY,
	stream      text   COLLATE "C" NOT NULL,
	seq         bigint NOT NULL,
	payload     bytea  NOT NULL,
	accepted_at bigint NOT NULL,
	UNIQUE (stream, seq)
);
CREATE TABLE deliveries (
	id           text     COLLATE "C" PRIMARY KEY REFERENCES events (id),
	stream       text     COLLATE "C" NOT NULL,
	seq          bigint   NOT NULL,
	state        smallint NOT NULL,
	attempts     integer  NOT NULL DEFAULT 0,
	next_at      bigint   NOT NULL,
	reason       smallint NOT NULL DEFAULT 0,
	last_attempt integer  NOT NULL DEFAULT 0,
	last_status  integer  NOT NULL DEFAULT 0,
	last_detail  text     NOT NULL DEFAULT '',
	last_at      bigint   NOT NULL DEFAULT 0,
	settled_at   bigint   NOT NULL DEFAULT 0,
	budget_from  bigint   NOT NULL
);
CREATE INDEX deliveries_stream_seq ON deliveries (stream, seq);
CREATE TABLE actions (
	id           text     COLLATE "C" NOT NULL REFERENCES events (id),
	n            integer  NOT NULL,
	kind         smallint NOT NULL,
	operator     text     NOT NULL,
	at           bigint   NOT NULL,
	token        bigint   NOT NULL,
	attempts     integer  NOT NULL,
	reason       smallint NOT NULL,
	last_attempt integer  NOT NULL,
	last_status  integer  NOT NULL,
	last_detail  text     NOT NULL,
	PRIMARY KEY (id, n)
);
