-- platform schema 3: each endpoint's rate limit, in attempts per second
-- (0: none).
ALTER TABLE platform_endpoints ADD COLUMN rate_limit bigint NOT NULL DEFAULT 0;
