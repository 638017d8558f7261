-- platform schema 3: each endpoint's rate limit, in attempts per second
-- (0: none), and its most attempts in flight (0: its ordering's default).
ALTER TABLE platform_endpoints ADD COLUMN rate_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE platform_endpoints ADD COLUMN max_in_flight INTEGER NOT NULL DEFAULT 0;
