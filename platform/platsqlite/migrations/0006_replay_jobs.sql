-- platform schema 6: bulk replay jobs, so that a restart resumes them.
-- after_seq is the job's cursor (the dead letters' Seq it has gone
-- through); owner holds the job until lease_until (microseconds, 0 once
-- finished). One job per endpoint runs at a time.
CREATE TABLE platform_replay_jobs (
	id          TEXT PRIMARY KEY,
	app_id      TEXT NOT NULL,
	endpoint_id TEXT NOT NULL,
	since       INTEGER NOT NULL,
	state       TEXT NOT NULL,
	after_seq   INTEGER NOT NULL,
	listed      INTEGER NOT NULL,
	replayed    INTEGER NOT NULL,
	skipped     INTEGER NOT NULL,
	failed      INTEGER NOT NULL,
	error       TEXT NOT NULL,
	owner       TEXT NOT NULL,
	lease_until INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL
);
CREATE INDEX platform_replay_jobs_endpoint ON platform_replay_jobs (endpoint_id, id);
CREATE UNIQUE INDEX platform_replay_jobs_running ON platform_replay_jobs (endpoint_id) WHERE state = 'running';
CREATE INDEX platform_replay_jobs_claim ON platform_replay_jobs (lease_until, id) WHERE state = 'running';
