package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Factory returns a new, empty store whose authoritative clock is now.
// It is called once per check.
type Factory func(t *testing.T, now func() time.Time) store.Store

// Run runs every check of the suite against stores built by newStore,
// each as a subtest of t.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			c.run(newEnv(t, newStore))
		})
	}
}

// check is one property of the contract, proved against a fresh store.
type check struct {
	name string
	run  func(e *env)
}

// checks is the suite, in the order it runs. Each check's comment (at
// its function) says what it proves.
var checks = append([]check{
	{"enqueue-new-record", enqueueNewRecord},
	{"enqueue-idempotent", enqueueIdempotent},
	{"enqueue-ids-case-sensitive", enqueueCaseSensitive},
	{"enqueue-seq-per-stream", enqueueSeqPerStream},
	{"enqueue-id-unique-across-streams", enqueueUniqueAcrossStreams},
	{"enqueue-bad-arguments", enqueueBadArguments},
	{"enqueue-batch-outcomes", enqueueBatchOutcomes},
	{"enqueue-batch-cancelled", enqueueBatchCancelled},
	{"enqueue-batch-held-by", enqueueBatchHeldBy},
	{"records-are-copies", recordsAreCopies},
	{"names-are-text", namesAreText},
	{"payloads-byte-exact", payloadsByteExact},
	{"get-unknown-id", getUnknownID},
	{"lease-acquire-grants", leaseAcquireGrants},
	{"lease-held-refuses-acquire", leaseHeldRefusesAcquire},
	{"lease-tokens-increase", leaseTokensIncrease},
	{"lease-bad-arguments", leaseBadArguments},
	{"lease-acquire-concurrent", leaseAcquireConcurrent},
	{"claim-concurrent", claimConcurrent},
	{"claim-only-due-work", claimOnlyDueWork},
	{"claim-max-and-name-order", claimMaxAndNameOrder},
	{"claim-earliest-due-first", claimEarliestDueFirst},
	{"claim-due-kept-by-save", claimDueKeptBySave},
	{"claim-due-kept-by-unreleased-save", claimDueKeptByUnreleasedSave},
	{"release-until-holds", releaseUntilHolds},
	{"release-until-lifted-by-replay", releaseUntilLiftedByReplay},
	{"fencing-forged-token", fencingForgedToken},
	{"fencing-expired-lease", fencingExpiredLease},
	{"fencing-forged-owner", fencingForgedOwner},
	{"renew-extends-keeps-token", renewExtendsKeepsToken},
	{"release-frees-stream", releaseFreesStream},
	{"release-stale-at-once", releaseStaleAtOnce},
	{"pending-order-and-after", pendingOrderAndAfter},
	{"save-valid-writes", saveValidWrites},
	{"save-terminal-again", saveTerminalAgain},
	{"save-invalid-writes", saveInvalidWrites},
	{"save-atomic", saveAtomic},
	{"save-neighbour-stream", saveNeighbourStream},
	{"save-concurrent-one-lease", saveConcurrentOneLease},
	{"save-retry-schedule", saveRetrySchedule},
	{"terminal-records", terminalRecords},
	{"outcome-kept", outcomeKept},
	{"outcome-detail-cleaned", outcomeDetailCleaned},
	{"pending-pages", pendingPages},
	{"dead-letters-pages", deadLettersPages},
	{"replay-fresh-budget", replayFreshBudget},
	{"operator-refused", operatorRefused},
	{"discard-settles", discardSettles},
	{"retention", retention},
	{"stats-backlog", statsBacklog},
	{"cancelled-context", cancelledContext},
	{"ping-answers", pingAnswers},
}, saveBatchChecks()...)

// epoch is where every check's clock starts.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// tick is the finest step of time a store must tell apart: the contract
// allows a backend to keep its times to the microsecond.
const tick = time.Microsecond

// ttl is the lease length the checks use unless they say otherwise.
const ttl = 10 * time.Second

// Clock is the store's clock in the suite: it moves only when a check
// advances it, so expiry and due work are tested without sleeping. A
// store's own tests may use it too. Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now reads the clock; pass c.Now as a store's clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one check's store, clock and helpers. Helpers fail the check on
// any unexpected error, so a check reads as the scenario it proves.
type env struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	s     store.Store
}

func newEnv(t *testing.T, newStore Factory) *env {
	c := NewClock(epoch)
	s := newStore(t, c.Now)
	if s == nil {
		t.Fatal("the factory returned a nil store")
	}
	return &env{t: t, ctx: t.Context(), clock: c, s: s}
}

// diffOpts make a nil and an empty slice equal: the contract does not say
// which an empty result is.
var diffOpts = []cmp.Option{cmpopts.EquateEmpty()}

func (e *env) enqueue(streamName, id, payload string) store.Record {
	e.t.Helper()
	rec, created, err := e.s.Enqueue(e.ctx, streamName, id, []byte(payload))
	if err != nil {
		e.t.Fatalf("Enqueue(%q, %q): %v", streamName, id, err)
	}
	if !created {
		e.t.Fatalf("Enqueue(%q, %q): created = false for a new ID", streamName, id)
	}
	return rec
}

func (e *env) acquire(streamName, owner string) store.Lease {
	e.t.Helper()
	l, err := e.s.Acquire(e.ctx, streamName, owner, ttl)
	if err != nil {
		e.t.Fatalf("Acquire(%q, %q): %v", streamName, owner, err)
	}
	return l
}

func (e *env) claim(owner string, max int) []store.Lease {
	e.t.Helper()
	ls, err := e.s.ClaimDue(e.ctx, owner, ttl, max)
	if err != nil {
		e.t.Fatalf("ClaimDue(%q, %d): %v", owner, max, err)
	}
	return ls
}

func (e *env) renew(l store.Lease, d time.Duration) store.Lease {
	e.t.Helper()
	nl, err := e.s.Renew(e.ctx, l, d)
	if err != nil {
		e.t.Fatalf("Renew(%+v, %v): %v", l, d, err)
	}
	return nl
}

func (e *env) release(l store.Lease) {
	e.t.Helper()
	if err := e.s.Release(e.ctx, l); err != nil {
		e.t.Fatalf("Release(%+v): %v", l, err)
	}
}

// save saves recs, as a machine's batch would persist them.
func (e *env) save(l store.Lease, recs ...machine.Record) {
	e.t.Helper()
	e.saveUpdates(l, store.UpdatesOf(recs)...)
}

func (e *env) saveUpdates(l store.Lease, ups ...store.Update) {
	e.t.Helper()
	if err := e.s.Save(e.ctx, l, ups); err != nil {
		e.t.Fatalf("Save(%+v): %v", l, err)
	}
}

func (e *env) get(id string) store.Record {
	e.t.Helper()
	rec, err := e.s.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%q): %v", id, err)
	}
	return rec
}

// mrec is record id in the machine's form.
func (e *env) mrec(id string) machine.Record {
	e.t.Helper()
	return e.get(id).Machine()
}

// pending reads every waiting record of l's stream after after, in one
// page big enough for any check.
func (e *env) pending(l store.Lease, after uint64) []machine.Record {
	e.t.Helper()
	return e.pendingPage(l, after, 1000)
}

func (e *env) pendingPage(l store.Lease, after uint64, limit int) []machine.Record {
	e.t.Helper()
	recs, err := e.s.Pending(e.ctx, l, after, limit)
	if err != nil {
		e.t.Fatalf("Pending(%+v, %d, %d): %v", l, after, limit, err)
	}
	return recs
}

func (e *env) deadLetters(streamName string) []store.Record {
	e.t.Helper()
	recs, err := e.s.DeadLetters(e.ctx, streamName, 0, 1000)
	if err != nil {
		e.t.Fatalf("DeadLetters(%q): %v", streamName, err)
	}
	return recs
}

// update moves record id of streamName on, as an owner would: it takes
// the stream's lease, persists each new attempt on its own first (as the
// machine does before it sends), saves the changed record and releases
// the lease. It is for setting a scene, not for the property under test.
func (e *env) update(streamName, id string, change func(r *machine.Record)) store.Record {
	e.t.Helper()
	l := e.acquire(streamName, "setup")
	r := e.mrec(id)
	want := r
	change(&want)
	for r.Attempts < want.Attempts {
		r.Attempts++
		e.save(l, r)
	}
	e.save(l, want)
	e.release(l)
	return e.get(id)
}

// snapshot reads the records named by ids, to compare before and after a
// call that must change nothing.
func (e *env) snapshot(ids ...string) map[string]store.Record {
	e.t.Helper()
	out := make(map[string]store.Record, len(ids))
	for _, id := range ids {
		out[id] = e.get(id)
	}
	return out
}

// unchanged fails the check if the records in before changed.
func (e *env) unchanged(what string, before map[string]store.Record) {
	e.t.Helper()
	ids := make([]string, 0, len(before))
	for id := range before {
		ids = append(ids, id)
	}
	if diff := cmp.Diff(before, e.snapshot(ids...), diffOpts...); diff != "" {
		e.t.Errorf("%s changed records (-before +after):\n%s", what, diff)
	}
}

// wantErr fails the check unless err is target (by errors.Is).
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Errorf("%s: error = %v, want %v", what, err, target)
	}
}

// leaseValid fails the check unless l is still the valid lease of its
// stream with its Expires unchanged: a renewal by a tiny ttl never
// shortens it, so it returns Expires exactly as it was.
func (e *env) leaseValid(what string, l store.Lease) {
	e.t.Helper()
	got, err := e.s.Renew(e.ctx, l, time.Nanosecond)
	if err != nil {
		e.t.Errorf("%s: the lease is no longer valid: %v", what, err)
		return
	}
	if diff := cmp.Diff(l, got); diff != "" {
		e.t.Errorf("%s: the lease changed (-want +got):\n%s", what, diff)
	}
}

func streamsOf(ls []store.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Stream
	}
	return out
}
