-- platform schema 1: applications, endpoints, event types, messages and
-- their fan-out, beside the delivery store's tables in the same file.
CREATE TABLE platform_apps (
	id         TEXT    PRIMARY KEY,
	name       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE TABLE platform_endpoints (
	id          TEXT    PRIMARY KEY,
	app_id      TEXT    NOT NULL,
	url         TEXT    NOT NULL,
	description TEXT    NOT NULL,
	event_types TEXT    NOT NULL,
	secrets     TEXT    NOT NULL,
	enabled     INTEGER NOT NULL,
	ordering    TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
CREATE INDEX platform_endpoints_app ON platform_endpoints (app_id, id);
CREATE TABLE platform_event_types (
	name        TEXT    PRIMARY KEY,
	description TEXT    NOT NULL,
	created_at  INTEGER NOT NULL
);
CREATE TABLE platform_messages (
	id              TEXT    PRIMARY KEY,
	app_id          TEXT    NOT NULL,
	event_type      TEXT    NOT NULL,
	idempotency_key TEXT    NOT NULL,
	payload         BLOB    NOT NULL,
	created_at      INTEGER NOT NULL
);
CREATE INDEX platform_messages_app ON platform_messages (app_id);
CREATE UNIQUE INDEX platform_messages_key ON platform_messages (app_id, idempotency_key) WHERE idempotency_key <> '';
CREATE TABLE platform_fanout (
	message_id  TEXT    NOT NULL,
	endpoint_id TEXT    NOT NULL,
	delivery_id TEXT    NOT NULL,
	stream      TEXT    NOT NULL,
	state       INTEGER NOT NULL,
	detail      TEXT    NOT NULL,
	PRIMARY KEY (message_id, endpoint_id)
);
CREATE INDEX platform_fanout_pending ON platform_fanout (message_id) WHERE state = 1;
