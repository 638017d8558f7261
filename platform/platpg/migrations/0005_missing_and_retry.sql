-- platform schema 5 (4 is another branch's): an index for a replay of an
-- endpoint's missing messages, which reads an application's messages
-- from an instant on.
CREATE INDEX platform_messages_app_created ON platform_messages (app_id, created_at);
