-- platform schema 6: bulk replay jobs, so that a restart resumes them.
-- after_seq is the job's cursor (the dead letters' Seq it has gone
-- through); owner holds the job until lease_until (microseconds, 0 once
-- finished). One job per endpoint runs at a time.
CREATE TABLE platform_replay_jobs (
	id          text COLLATE "C" PRIMARY KEY,
	app_id      text COLLATE "C" NOT NULL,
	endpoint_id text COLLATE "C" NOT NULL,
	since       bigint NOT NULL,
	state       text NOT NULL,
	after_seq   bigint NOT NULL,
	listed      bigint NOT NULL,
	replayed    bigint NOT NULL,
	skipped     bigint NOT NULL,
	failed      bigint NOT NULL,
	error       text NOT NULL,
	owner       text NOT NULL,
	lease_until bigint NOT NULL,
	created_at  bigint NOT NULL,
	updated_at  bigint NOT NULL,
	finished_at bigint NOT NULL
);
CREATE INDEX platform_replay_jobs_endpoint ON platform_replay_jobs (endpoint_id, id);
CREATE UNIQUE INDEX platform_replay_jobs_running ON platform_replay_jobs (endpoint_id) WHERE state = 'running';
CREATE INDEX platform_replay_jobs_claim ON platform_replay_jobs (lease_until, id) WHERE state = 'running';
