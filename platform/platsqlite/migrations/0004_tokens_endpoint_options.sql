-- platform schema 4: application tokens, and an endpoint's rotated
-- secrets, custom headers and attempt timeout.
--
-- Application tokens are kept as the SHA-256 of the token, never the
-- token.
CREATE TABLE platform_tokens (
	id         TEXT    PRIMARY KEY,
	app_id     TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	hash       TEXT    NOT NULL UNIQUE,
	created_at INTEGER NOT NULL
);
CREATE INDEX platform_tokens_app ON platform_tokens (app_id, id);

-- Secrets an endpoint was rotated away from, each signing until its
-- expiry: a JSON array of {"secret", "expires_at_us"}.
ALTER TABLE platform_endpoints ADD COLUMN old_secrets TEXT NOT NULL DEFAULT '[]';

-- Custom headers set on every request to an endpoint: a JSON object.
ALTER TABLE platform_endpoints ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';

-- Each endpoint's attempt timeout in milliseconds (0: the default, 30 s).
ALTER TABLE platform_endpoints ADD COLUMN attempt_timeout_ms INTEGER NOT NULL DEFAULT 0;
