package invariants

import (
	"slices"
	"time"

	"github.com/courierlab/courier/machine"
)

// The platform's rules (issue 27): a message published to an application
// fans out to the endpoints that want it, each delivery an event of the
// endpoint's own stream. The log says which endpoints wanted each message
// (Fanned, by the log's own reading of their filters and states) and when
// an operator replayed an endpoint's dead letters in bulk (BulkReplay).
const (
	// FanoutOnce: every delivery of an accepted message to an endpoint
	// that wanted it (Fanned, FanSubscribed) reaches the endpoint's stream
	// and ends applied by the receiver, or dead; applied-once holds it to
	// once.
	FanoutOnce = "fanout-once"
	// FanoutOnlySubscribed: a delivery to an endpoint that did not want
	// the message (FanUnsubscribed) is never accepted into its stream,
	// sent or applied.
	FanoutOnlySubscribed = "fanout-only-subscribed"
	// DisabledGetsNothing: the pause rule, for an endpoint disabled (a
	// Paused entry with Detail PauseDisabled): nothing is sent under a
	// lease granted while it is disabled, and the owner the disable found
	// stops starting attempts within a renewal.
	DisabledGetsNothing = "disabled-gets-nothing"
	// ReplaySince: a bulk replay since T replays, once, every undiscarded
	// dead letter of the stream whose budget began at or after T, and
	// none that died before T. A job a crash interrupted is judged by its
	// name from its begin to its end, across the resume: once per job. (One whose budget began before T and that
	// died after it is left to the store's reading of its last attempt,
	// which the log does not carry.)
	ReplaySince = "replay-since"
	// ReplayMissing: an operator's replay of missing messages since T to
	// an endpoint (MissingReplay) gives it a delivery of every message
	// published at or after T (its publication as the platform keeps it,
	// to the microsecond: a message published within T's microsecond
	// but before it is not chosen) that its filter takes and that it missed
	// (FanMissed: not yet created, or disabled, when it was published),
	// and each of those ends applied or dead; a message it missed and no
	// replay-missing chose (published before every since asked) is never
	// accepted into its stream. Asking again adds nothing (applied-once
	// holds each to once).
	ReplayMissing = "replay-missing"
)

// Details of the platform's entries.
const (
	FanSubscribed   = "subscribed"
	FanUnsubscribed = "unsubscribed"
	// FanMissed: the endpoint's filter takes the message, but the
	// endpoint did not get it when it was published (not created yet,
	// or disabled): it gets it only from a replay-missing (ReplayMissing).
	FanMissed = "missed"
	BulkBegin = "begin"
	BulkEnd   = "end"
	// BulkFailed ends a bulk replay the store did not let finish (a
	// listing or a replay refused): what it replayed is judged, what it
	// left is not; the operator runs it again.
	BulkFailed = "failed"
	// PauseDisabled is the Detail of a Paused entry that disables an
	// endpoint, and of its Resumed when it is enabled again.
	PauseDisabled = "disabled"
)

// fanState follows the platform's deliveries of one stream: what was
// fanned to it, what became of each, and the bulk replays in progress
// (several: a job a crash interrupted waits to be resumed while others
// run).
type fanState struct {
	ids  map[string]int // index in list, by delivery ID
	list []fanDelivery
	jobs []bulkJob
}

// fanDelivery is what fanState knows of one event of the stream.
type fanDelivery struct {
	id                 string
	fanned, subscribed bool
	// missed: the endpoint missed the message (FanMissed); subscribed
	// then once a replay-missing chose it, at step missStep.
	missed          bool
	missStep        int
	fannedAt        time.Time // when its message was published (Fanned)
	step            int       // the step of its Fanned
	flagged         bool
	applied         int
	dead, discarded bool
	deadAt          time.Time // when it was persisted dead
	budget          time.Time // when its current budget began
}

// bulkJob is a bulk replay in progress: by names it, want holds the
// indexes of the dead letters it must replay, never those it must not,
// and done those it replayed. A dead letter that someone else replays or
// discards while the job runs leaves want and never: what the job then
// finds of it is no longer what it began with.
type bulkJob struct {
	on          bool
	by          string
	since       time.Time
	step        int
	want, never []int
	done        []int
}

func (f *fanState) reset() {
	clear(f.ids)
	f.list, f.jobs = f.list[:0], f.jobs[:0]
}

// of returns the delivery id's state, new if it was never seen.
func (f *fanState) of(id string) *fanDelivery {
	if f.ids == nil {
		f.ids = map[string]int{}
	}
	i, ok := f.ids[id]
	if !ok {
		i = len(f.list)
		f.ids[id] = i
		f.list = append(f.list, fanDelivery{id: id})
	}
	return &f.list[i]
}

// observe follows one entry. Only the entries of a platform run (one with
// a Fanned entry) are followed, so that other runs pay a map lookup at
// most.
func (f *fanState) observe(c *checker, e *Entry) {
	if len(f.list) == 0 && e.Kind != Fanned {
		return
	}
	switch e.Kind {
	case Fanned:
		d := f.of(e.ID)
		d.fanned, d.subscribed, d.missed, d.step, d.fannedAt = true, e.Detail == FanSubscribed, e.Detail == FanMissed, e.Step, e.At
	case MissingReplay:
		f.missing(e)
	case Persisted:
		d := f.of(e.Record.ID)
		d.dead, d.budget = e.Record.State == machine.Dead, e.Record.AcceptedAt
		if d.dead {
			d.deadAt = e.At
		}
		f.unwanted(c, d, e, "accepted into the endpoint's stream")
	case Sent:
		f.unwanted(c, f.of(e.ID), e, "sent")
	case Applied:
		d := f.of(e.ID)
		d.applied++
		f.unwanted(c, d, e, "applied")
	case DeadDiscarded:
		f.of(e.ID).discarded = true
		f.excuse(f.ids[e.ID], "")
	case Replayed:
		d := f.of(e.ID)
		d.dead, d.budget = false, e.Record.AcceptedAt
		f.replayed(c, e)
		f.excuse(f.ids[e.ID], e.Worker)
	case BulkReplay:
		f.bulk(c, e)
	}
}

// unwanted judges an entry about delivery d: the endpoint did not want it.
func (f *fanState) unwanted(c *checker, d *fanDelivery, e *Entry, what string) {
	if d.flagged || !d.fanned || d.subscribed {
		return
	}
	d.flagged = true
	if d.missed {
		c.fail(ReplayMissing, d.id, e.Step, "%s, but the endpoint missed the message (step %d) and no replay-missing since its publication asked for it", what, d.step)
		return
	}
	c.fail(FanoutOnlySubscribed, d.id, e.Step, "%s, but the endpoint did not want the message when it was published (step %d)", what, d.step)
}

// missing is an operator's replay-missing since e.Until: every delivery
// the endpoint missed of a message published since then is now wanted.
func (f *fanState) missing(e *Entry) {
	for i := range f.list {
		d := &f.list[i]
		if d.missed && !d.subscribed && !d.fannedAt.Truncate(time.Microsecond).Before(e.Until) {
			d.subscribed, d.missStep = true, e.Step
		}
	}
}

// bulk begins or ends a bulk replay. At its beginning the dead letters it
// must replay, and those it must not, are set from what the log shows;
// at its end each it had to replay must have been.
func (f *fanState) bulk(c *checker, e *Entry) {
	if e.Detail == BulkBegin {
		j := f.job(e.Worker)
		if j == nil {
			f.jobs = append(f.jobs, bulkJob{})
			j = &f.jobs[len(f.jobs)-1]
		}
		*j = bulkJob{on: true, by: e.Worker, since: e.Until, step: e.Step, want: j.want[:0], never: j.never[:0], done: j.done[:0]}
		for i, d := range f.list {
			switch {
			case !d.dead || d.discarded:
			case !d.budget.Before(j.since):
				j.want = append(j.want, i)
			case d.deadAt.Before(j.since):
				j.never = append(j.never, i)
			}
		}
		return
	}
	j := f.job(e.Worker)
	if j == nil || !j.on {
		return
	}
	j.on = false
	if e.Detail == BulkFailed {
		return // the store stopped it: what it left is the next run's
	}
	for _, i := range j.want {
		if contains(j.done, i) {
			continue
		}
		if j.since.IsZero() {
			c.fail(ReplaySince, f.list[i].id, e.Step, "a dead letter was not replayed by %s, a replay of every dead letter (begun at step %d)", j.by, j.step)
			continue
		}
		c.fail(ReplaySince, f.list[i].id, e.Step, "a dead letter whose budget began %v after the replay's since was not replayed by %s (begun at step %d)",
			f.list[i].budget.Sub(j.since), j.by, j.step)
	}
}

// job is the bulk replay named by, begun at some time; nil if none.
func (f *fanState) job(by string) *bulkJob {
	for k := range f.jobs {
		if f.jobs[k].by == by {
			return &f.jobs[k]
		}
	}
	return nil
}

// excuse takes dead letter i out of what the bulk replays in progress
// other than by's must or must not replay: another replayed or discarded
// it meanwhile.
func (f *fanState) excuse(i int, by string) {
	for k := range f.jobs {
		if j := &f.jobs[k]; j.on && j.by != by {
			j.want = slices.DeleteFunc(j.want, func(x int) bool { return x == i })
			j.never = slices.DeleteFunc(j.never, func(x int) bool { return x == i })
		}
	}
}

// replayed judges a replay of a bulk replay in progress.
func (f *fanState) replayed(c *checker, e *Entry) {
	j := f.job(e.Worker)
	if j == nil || !j.on {
		return
	}
	i := f.ids[e.ID]
	switch {
	case contains(j.done, i):
		c.fail(ReplaySince, e.ID, e.Step, "replayed twice by %s", j.by)
	case contains(j.never, i):
		c.fail(ReplaySince, e.ID, e.Step, "replayed by %s, but it died %v before the replay's since", j.by, j.since.Sub(f.list[i].deadAt))
	}
	j.done = append(j.done, i)
}

// final judges, at the end of a finished run, that each delivery an
// endpoint wanted was applied, or is dead.
func (f *fanState) final(c *checker) {
	if !c.run.Finished {
		return
	}
	for _, d := range f.list {
		if d.missed && d.subscribed && d.applied == 0 && !d.dead && !d.discarded {
			c.fail(ReplayMissing, d.id, -1, "a replay-missing (step %d) chose the message, and its delivery was never applied nor dead", d.missStep)
			continue
		}
		if d.subscribed && d.applied == 0 && !d.dead && !d.discarded {
			c.fail(FanoutOnce, d.id, -1, "the endpoint wanted the message (step %d), and the delivery was never applied nor dead", d.step)
		}
	}
}

func contains(list []int, i int) bool {
	for _, x := range list {
		if x == i {
			return true
		}
	}
	return false
}
