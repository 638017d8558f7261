-- platform schema 2: the attempt log (one row per HTTP attempt to an
-- endpoint, pruned by age) and each endpoint's health (one row per
-- endpoint with an attempt recorded). A time of 0 is "never".
CREATE TABLE platform_attempts (
	id               TEXT   PRIMARY KEY,
	app_id           TEXT   NOT NULL,
	message_id       TEXT   NOT NULL,
	endpoint_id      TEXT   NOT NULL,
	delivery_id      TEXT   NOT NULL,
	attempt          INTEGER NOT NULL,
	at               INTEGER NOT NULL,
	duration_us      INTEGER NOT NULL,
	status           INTEGER NOT NULL,
	outcome          TEXT   NOT NULL,
	detail           TEXT   NOT NULL,
	response_headers TEXT   NOT NULL,
	response_body    BLOB  NOT NULL
);
CREATE INDEX platform_attempts_message ON platform_attempts (message_id, id);
CREATE INDEX platform_attempts_endpoint ON platform_attempts (endpoint_id, id);
CREATE INDEX platform_attempts_app ON platform_attempts (app_id);
CREATE INDEX platform_attempts_at ON platform_attempts (at);
CREATE TABLE platform_endpoint_health (
	endpoint_id     TEXT   PRIMARY KEY,
	app_id          TEXT   NOT NULL,
	last_attempt    INTEGER NOT NULL,
	last_success    INTEGER NOT NULL,
	failing_since   INTEGER NOT NULL,
	streak          INTEGER NOT NULL,
	successes       INTEGER NOT NULL,
	failures        INTEGER NOT NULL,
	disabled_reason TEXT   NOT NULL,
	disabled_at     INTEGER NOT NULL
);
CREATE INDEX platform_endpoint_health_app ON platform_endpoint_health (app_id);
