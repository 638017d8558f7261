-- platform schema 1: applications, endpoints, event types, messages and
-- their fan-out, beside the delivery store's tables in the same schema.
-- Text keys collate as bytes ("C"), so that ID and name order are
-- SQLite's.
CREATE TABLE platform_apps (
	id         text    COLLATE "C" PRIMARY KEY,
	name       text    NOT NULL,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL
);
CREATE TABLE platform_endpoints (
	id          text    COLLATE "C" PRIMARY KEY,
	app_id      text COLLATE "C" NOT NULL,
	url         text    NOT NULL,
	description text    NOT NULL,
	event_types text    NOT NULL,
	secrets     text    NOT NULL,
	enabled     bigint NOT NULL,
	ordering    text    NOT NULL,
	created_at  bigint NOT NULL,
	updated_at  bigint NOT NULL
);
CREATE INDEX platform_endpoints_app ON platform_endpoints (app_id, id);
CREATE TABLE platform_event_types (
	name        text    COLLATE "C" PRIMARY KEY,
	description text    NOT NULL,
	created_at  bigint NOT NULL
);
CREATE TABLE platform_messages (
	id              text    COLLATE "C" PRIMARY KEY,
	app_id          text COLLATE "C" NOT NULL,
	event_type      text    NOT NULL,
	idempotency_key text COLLATE "C" NOT NULL,
	payload         bytea    NOT NULL,
	created_at      bigint NOT NULL
);
CREATE INDEX platform_messages_app ON platform_messages (app_id);
CREATE UNIQUE INDEX platform_messages_key ON platform_messages (app_id, idempotency_key) WHERE idempotency_key <> '';
CREATE TABLE platform_fanout (
	message_id  text COLLATE "C" NOT NULL,
	endpoint_id text COLLATE "C" NOT NULL,
	delivery_id text    NOT NULL,
	stream      text    NOT NULL,
	state       bigint NOT NULL,
	detail      text    NOT NULL,
	PRIMARY KEY (message_id, endpoint_id)
);
CREATE INDEX platform_fanout_pending ON platform_fanout (message_id) WHERE state = 1;
