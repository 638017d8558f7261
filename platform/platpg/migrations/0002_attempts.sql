-- platform schema 2: the attempt log (one row per HTTP attempt to an
-- endpoint, pruned by age) and each endpoint's health (one row per
-- endpoint with an attempt recorded). A time of 0 is "never".
CREATE TABLE platform_attempts (
	id               text   COLLATE "C" PRIMARY KEY,
	app_id           text   COLLATE "C" NOT NULL,
	message_id       text   COLLATE "C" NOT NULL,
	endpoint_id      text   COLLATE "C" NOT NULL,
	delivery_id      text   NOT NULL,
	attempt          bigint NOT NULL,
	at               bigint NOT NULL,
	duration_us      bigint NOT NULL,
	status           bigint NOT NULL,
	outcome          text   NOT NULL,
	detail           text   NOT NULL,
	response_headers text   NOT NULL,
	response_body    bytea  NOT NULL
);
CREATE INDEX platform_attempts_message ON platform_attempts (message_id, id);
CREATE INDEX platform_attempts_endpoint ON platform_attempts (endpoint_id, id);
CREATE INDEX platform_attempts_app ON platform_attempts (app_id);
CREATE INDEX platform_attempts_at ON platform_attempts (at);
CREATE TABLE platform_endpoint_health (
	endpoint_id     text   COLLATE "C" PRIMARY KEY,
	app_id          text   COLLATE "C" NOT NULL,
	last_attempt    bigint NOT NULL,
	last_success    bigint NOT NULL,
	failing_since   bigint NOT NULL,
	streak          bigint NOT NULL,
	successes       bigint NOT NULL,
	failures        bigint NOT NULL,
	disabled_reason text   NOT NULL,
	disabled_at     bigint NOT NULL
);
CREATE INDEX platform_endpoint_health_app ON platform_endpoint_health (app_id);
