// The platform's rules (fanout-once, fanout-only-subscribed,
// disabled-gets-nothing, replay-since, replay-missing) report exactly the broken
// guarantee for hand-built logs of one endpoint's stream that each break
// one, and nothing for logs of correct runs.
package invariants_test

import (
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// fan logs that the endpoint wanted id's message (or not).
func (b *logb) fan(id string, wanted bool) int {
	d := invariants.FanUnsubscribed
	if wanted {
		d = invariants.FanSubscribed
	}
	return b.add(invariants.Entry{Kind: invariants.Fanned, ID: id, Detail: d})
}

// miss logs that the endpoint missed id's message, which its filter
// takes (created later, or disabled).
func (b *logb) miss(id string) int {
	return b.add(invariants.Entry{Kind: invariants.Fanned, ID: id, Detail: invariants.FanMissed})
}

// askMissing logs an operator's replay-missing since since.
func (b *logb) askMissing(since time.Duration) int {
	return b.add(invariants.Entry{Kind: invariants.MissingReplay, Worker: "operator", Until: epoch.Add(since)})
}

// disable logs the endpoint disabled (on) or enabled again.
func (b *logb) disable(on bool) int {
	k := invariants.Resumed
	if on {
		k = invariants.Paused
	}
	return b.add(invariants.Entry{Kind: k, Worker: "operator", Detail: invariants.PauseDisabled})
}

// bulk logs a bulk replay by "bulk" since since (zero: all) of ids, in
// order, then its end (end: BulkEnd or BulkFailed).
func (b *logb) bulk(since time.Duration, end string, ids ...string) (begin int, replays []int) {
	var t time.Time
	if since > 0 {
		t = epoch.Add(since)
	}
	begin = b.add(invariants.Entry{Kind: invariants.BulkReplay, Worker: "bulk", Until: t, Detail: invariants.BulkBegin})
	for _, id := range ids {
		s := b.replay(id, 0)
		b.run.Entries[s].Worker = "bulk"
		replays = append(replays, s)
	}
	b.add(invariants.Entry{Kind: invariants.BulkReplay, Worker: "bulk", Until: t, Detail: end})
	return begin, replays
}

func TestFanout(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "wanted and delivered, unwanted never enqueued",
			reason: "the endpoint gets what it wanted once, and nothing else",
			build: func(b *logb) []found {
				b.fan("m1", true)
				b.fan("m2", false)
				b.accept("m1")
				b.deliver("m1")
				b.finish()
				return nil
			},
		},
		{
			name:   "wanted, dead, is kept",
			reason: "a delivery that dies is as settled as one applied",
			build: func(b *logb) []found {
				b.fan("m1", true)
				b.accept("m1")
				b.attempt("m1")
				b.die("m1", machine.Rejected)
				b.finish()
				return nil
			},
		},
		{
			name:   "wanted, never enqueued",
			reason: "a fan-out that marked a delivery it never enqueued loses it (fanout-marks-unsent)",
			build: func(b *logb) []found {
				b.fan("m1", true)
				b.finish()
				return []found{{invariants.FanoutOnce, "m1", final}}
			},
		},
		{
			name:   "wanted, never enqueued, run stopped early",
			reason: "a run stopped on purpose is not held to what it had left",
			build: func(b *logb) []found {
				b.fan("m1", true)
				b.stop()
				return nil
			},
		},
		{
			name:   "unwanted, enqueued and applied",
			reason: "a filter ignored sends the endpoint what it did not subscribe to (filter-ignored); reported once",
			build: func(b *logb) []found {
				b.fan("m1", false)
				s := b.accept("m1") - 1
				b.deliver("m1")
				b.finish()
				return []found{{invariants.FanoutOnlySubscribed, "m1", s}}
			},
		},
	})
}

func TestDisabledGetsNothing(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "takeover after the enable",
			reason: "a lease granted after the endpoint is enabled again delivers",
			build: func(b *logb) []found {
				b.fan("m1", true)
				b.accept("m1")
				b.disable(true)
				b.wait(time.Second)
				b.disable(false)
				b.grant(1)
				b.deliverAs("m1", 1)
				b.finish()
				return nil
			},
		},
		{
			name:   "takeover while disabled",
			reason: "a policy that ignores Enabled lets a worker take the disabled endpoint's stream and deliver (disabled-endpoint-served)",
			build: func(b *logb) []found {
				b.fan("m1", true)
				b.accept("m1")
				b.disable(true)
				b.grant(1)
				s := b.deliverAs("m1", 1)
				b.disable(false)
				b.finish()
				return []found{{invariants.DisabledGetsNothing, "m1", s}}
			},
		},
		{
			name:   "a stream pause is still the pause rule's",
			reason: "the rule is the pause's, named by what paused the stream",
			build: func(b *logb) []found {
				b.accept("e1")
				b.pause(true)
				b.grant(1)
				s := b.deliverAs("e1", 1)
				b.pause(false)
				b.finish()
				return []found{{invariants.PauseHeld, "e1", s}}
			},
		},
	})
}

// deadAt makes id a dead letter accepted at from and dead at to.
func (b *logb) deadAt(id string, from, to time.Duration) {
	b.now = from
	b.fan(id, true)
	b.accept(id)
	b.attempt(id)
	b.now = to
	b.die(id, machine.Rejected)
}

func TestReplaySince(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "since replays the later dead letters only",
			reason: "a replay since T takes a dead letter whose budget began after T and leaves one that died before",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.deadAt("m2", 5*time.Second, 6*time.Second)
				b.bulk(3*time.Second, invariants.BulkEnd, "m2")
				b.deliver("m2")
				b.finish()
				return nil
			},
		},
		{
			name:   "since ignored",
			reason: "a replay that ignores since replays a dead letter that died before it (replay-since-ignored)",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.deadAt("m2", 5*time.Second, 6*time.Second)
				_, r := b.bulk(3*time.Second, invariants.BulkEnd, "m1", "m2")
				b.deliver("m1")
				b.deliver("m2")
				b.finish()
				return []found{{invariants.ReplaySince, "m1", r[0]}}
			},
		},
		{
			name:   "a chosen dead letter left out",
			reason: "a replay of every dead letter must replay each",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.deadAt("m2", 2*time.Second, 3*time.Second)
				b.bulk(0, invariants.BulkEnd, "m2")
				end := len(b.run.Entries) - 1
				b.deliver("m2")
				b.finish()
				return []found{{invariants.ReplaySince, "m1", end}}
			},
		},
		{
			name:   "a failed replay is not held to what it left",
			reason: "the store stopped it; the operator runs it again",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.deadAt("m2", 2*time.Second, 3*time.Second)
				b.bulk(0, invariants.BulkFailed, "m2")
				b.bulk(0, invariants.BulkEnd, "m1")
				b.deliver("m1")
				b.deliver("m2")
				b.finish()
				return nil
			},
		},
		{
			name:   "a discarded dead letter is not chosen",
			reason: "an operator discarded it: no replay takes it",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.discardDead("m1")
				b.bulk(0, invariants.BulkEnd)
				b.finish()
				return nil
			},
		},
	})
}

// begin and end log a bulk replay job's first and last entries; byJob
// replays id as job by.
func (b *logb) begin(by string, since time.Duration) int {
	var t time.Time
	if since > 0 {
		t = epoch.Add(since)
	}
	return b.add(invariants.Entry{Kind: invariants.BulkReplay, Worker: by, Until: t, Detail: invariants.BulkBegin})
}

func (b *logb) end(by string) int {
	return b.add(invariants.Entry{Kind: invariants.BulkReplay, Worker: by, Detail: invariants.BulkEnd})
}

func (b *logb) byJob(id, by string) int {
	s := b.replay(id, 0)
	b.run.Entries[s].Worker = by
	return s
}

// A bulk replay job that a crash interrupts is resumed later: the log
// holds its begin, the replays before the crash, what happened meanwhile,
// the replays of the resumed job and its end.
func TestReplaySinceAcrossAResume(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "replayed before the crash, died again, left alone on resume",
			reason: "a job replays each dead letter once, however often it is resumed (ResumeDeadPage)",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.deadAt("m2", time.Second, 2*time.Second)
				b.begin("job", 0)
				b.byJob("m1", "job")
				b.attempt("m1")
				b.die("m1", machine.Rejected)
				b.wait(10 * time.Second)
				b.byJob("m2", "job")
				b.end("job")
				b.deliver("m2")
				b.finish()
				return nil
			},
		},
		{
			name:   "replayed again on resume",
			reason: "a resume that lists the crashed page again and ignores the job's own replays replays a dead letter twice",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.begin("job", 0)
				b.byJob("m1", "job")
				b.attempt("m1")
				b.die("m1", machine.Rejected)
				b.wait(10 * time.Second)
				s := b.byJob("m1", "job")
				b.end("job")
				b.deliver("m1")
				b.finish()
				return []found{{invariants.ReplaySince, "m1", s}}
			},
		},
		{
			name:   "replayed by another while the job waited",
			reason: "a dead letter another replay took while the job was interrupted is no longer the job's to replay",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.deadAt("m2", time.Second, 2*time.Second)
				b.begin("job", 0)
				b.byJob("m1", "job")
				b.deliver("m1")
				b.begin("other", 0)
				b.byJob("m2", "other")
				b.end("other")
				b.deliver("m2")
				b.end("job")
				b.finish()
				return nil
			},
		},
		{
			name:   "two jobs, one leaves a dead letter out",
			reason: "each job is judged by its own name, the one in progress too",
			build: func(b *logb) []found {
				b.deadAt("m1", 0, time.Second)
				b.deadAt("m2", time.Second, 2*time.Second)
				b.begin("job", 0)
				b.byJob("m1", "job")
				b.begin("other", 3*time.Second)
				b.end("other")
				e := b.end("job")
				b.deliver("m1")
				b.finish()
				return []found{{invariants.ReplaySince, "m2", e}}
			},
		},
	})
}

func TestReplayMissing(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "missed since T, asked, delivered once; missed before T, never",
			reason: "a replay-missing gives the endpoint what it missed since T and nothing older; asking again adds nothing",
			build: func(b *logb) []found {
				b.miss("m1")
				b.wait(2 * time.Second)
				b.miss("m2")
				b.askMissing(time.Second)
				b.accept("m2")
				b.deliver("m2")
				b.askMissing(time.Second)
				b.finish()
				return nil
			},
		},
		{
			name:   "missed, never asked, enqueued",
			reason: "what an endpoint missed reaches it only when asked",
			build: func(b *logb) []found {
				b.miss("m1")
				s := b.accept("m1") - 1
				b.deliver("m1")
				b.finish()
				return []found{{invariants.ReplayMissing, "m1", s}}
			},
		},
		{
			name:   "missed before T, enqueued by a replay-missing since T",
			reason: "a replay-missing that ignores its since gives the endpoint older messages (missing-ignores-since)",
			build: func(b *logb) []found {
				b.miss("m1")
				b.wait(2 * time.Second)
				b.miss("m2")
				b.askMissing(time.Second)
				s := b.accept("m1") - 1
				b.accept("m2")
				b.deliver("m1")
				b.deliver("m2")
				b.finish()
				return []found{{invariants.ReplayMissing, "m1", s}}
			},
		},
		{
			name:   "chosen by a replay-missing, never enqueued",
			reason: "a delivery a replay-missing chose must end applied or dead, as a fan-out's",
			build: func(b *logb) []found {
				b.miss("m1")
				b.askMissing(0)
				b.finish()
				return []found{{invariants.ReplayMissing, "m1", final}}
			},
		},
		{
			name:   "missed within T's microsecond, after T, not chosen",
			reason: "the platform keeps a message's creation to the microsecond: published 300 ns after T but in a microsecond that began before it, the message was created before T as the platform reads it (sweep seed 815600025892)",
			build: func(b *logb) []found {
				b.wait(time.Second + 700*time.Nanosecond)
				b.miss("m1")
				b.askMissing(time.Second + 400*time.Nanosecond)
				b.finish()
				return nil
			},
		},
		{
			name:   "missed, unasked, never enqueued",
			reason: "a delivery missed and never asked for is not owed",
			build: func(b *logb) []found {
				b.miss("m1")
				b.finish()
				return nil
			},
		},
	})
}
