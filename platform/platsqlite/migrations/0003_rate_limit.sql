-- platform schema 3: each endpoint's rate limit, in attempts per second
-- (0: none).
ALTER TABLE platform_endpoints ADD COLUMN rate_limit INTEGER NOT NULL DEFAULT 0;
