-- platform schema 5 (4 is another branch's): an index for a replay of an
-- endpoint's missing messages, which reads an application's messages
-- from an instant on; and each endpoint's retry and status policy: its
-- most attempts and backoff bounds (0: the default), and the statuses
-- that reject at once, as JSON ('null': the default, 410 only).
CREATE INDEX platform_messages_app_created ON platform_messages (app_id, created_at);
ALTER TABLE platform_endpoints ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE platform_endpoints ADD COLUMN base_backoff_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE platform_endpoints ADD COLUMN max_backoff_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE platform_endpoints ADD COLUMN reject_statuses TEXT NOT NULL DEFAULT 'null';
