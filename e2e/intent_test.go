// This file lets a killed child's last durable write keep the worker's
// clock reading for it. The child announces each Save before making it (an
// "intent" line: the records, the lease, and the reading of the step that
// made them) and checks the announcement against the worker's own report
// once the Save returns; the parent, finding in the file a write whose
// line the kill cut off, logs it at the announced reading. TestKillLoop
// judges the log; the test here proves the read-back's stamp.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/worker"
)

// intent is what a child announces before a Save: the updates, the lease
// they are written under, and At, the worker's clock reading for the step
// that made them when Exact, else only an instant no earlier than it.
type intent struct {
	At      time.Time
	Exact   bool
	Worker  string
	Token   uint64
	Updates []store.Update // without their outcomes
}

// stepClock follows, in a child, which clock reading the worker's step in
// progress was made at. The Service reads the clock itself (it takes no
// clock to read) and hands the reading to Advance or Deliver; the child
// sees it only as the At of the events the worker reports (every event of
// a step carries the step's reading), so before a Save it knows the
// reading only if an event of the same step came first. An event is of
// the step whose Save follows when
//
//   - it came after a store call made with the Save's context: the Service
//     makes one context per step (an Advance's or a reply's store calls),
//     and the worker's events and store calls come one after the other on
//     the Service's loop; or
//   - its At is no earlier than the Save's context was made (its deadline
//     less StoreTimeout): every earlier step's reading was taken before
//     this step began. A reply's step (Deliver) reports the reply before
//     its Save, at a reading the Service takes after making the context.
//
// An Advance whose first store call is the Save (a machine's timer) has
// no such event: its intent carries the instant Save was called, a bound.
// Both premises are about the Service, not this package, so every intent
// is checked against the Persisted event that follows its Save: a reading
// that differs, or a bound before it, fails the test.
type stepClock struct {
	mu      sync.Mutex
	timeout time.Duration   // the Service's StoreTimeout
	ctx     context.Context // the context of the worker's latest store call
	at      time.Time       // the At of the worker's latest event
	atCtx   context.Context // ctx when that event came
	last    *intent         // the latest Save's, until its Persisted event
}

// called notes a store call the worker made with ctx.
func (c *stepClock) called(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
}

// announce prints the intent of a Save the worker is about to make with
// ctx under l, and remembers it for the check.
func (c *stepClock) announce(ctx context.Context, l store.Lease, ups []store.Update) {
	if c == nil {
		return
	}
	now := time.Now() // no earlier than the reading: the step read it first
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctx = ctx
	in := &intent{At: now, Worker: l.Owner, Token: l.Token, Updates: make([]store.Update, len(ups))}
	for i, u := range ups {
		u.Outcome = nil
		in.Updates[i] = u
	}
	if at, ok := c.readingLocked(ctx); ok {
		in.At, in.Exact = at, true
	}
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	// Printed (one write to the pipe) before the Save begins: a kill
	// after the write is durable cannot cut it off.
	say("intent %s %s", l.Stream, b)
	c.last = in
}

// readingLocked is the reading of the step making a store call with ctx,
// if an event of that step has been seen (see stepClock).
func (c *stepClock) readingLocked(ctx context.Context) (time.Time, bool) {
	if c.at.IsZero() {
		return time.Time{}, false
	}
	if c.atCtx == ctx {
		return c.at, true
	}
	if dl, ok := ctx.Deadline(); ok && !c.at.Before(dl.Add(-c.timeout)) {
		return c.at, true
	}
	return time.Time{}, false
}

// saved forgets the latest intent if its Save failed: no Persisted
// event comes for it.
func (c *stepClock) saved(err error) {
	if c == nil || err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = nil
}

// observed notes an event of the worker's, and checks the latest intent
// against the Persisted event its Save led to. A mismatch is printed for
// the parent to fail on.
func (c *stepClock) observed(ev worker.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at, c.atCtx = ev.At, c.ctx
	if ev.Kind != worker.Persisted || c.last == nil {
		return
	}
	in := c.last
	c.last = nil
	switch {
	case in.Exact && !in.At.Equal(ev.At):
		say("intent-wrong %s announced the reading %s; the worker reported %s", ev.Stream, in.At.Format(time.RFC3339Nano), ev.At.Format(time.RFC3339Nano))
	case !in.Exact && in.At.Before(ev.At):
		say("intent-wrong %s announced the bound %s; the worker reported the later %s", ev.Stream, in.At.Format(time.RFC3339Nano), ev.At.Format(time.RFC3339Nano))
	}
}

// observer is obs, with every event noted by c first.
func (c *stepClock) observer(obs worker.Observer) worker.Observer {
	return worker.ObserverFunc(func(ev worker.Event) {
		c.observed(ev)
		obs.Observe(ev)
	})
}

// matches reports whether the intent wrote m's delivery state, as the
// file holds it: instants to the microsecond.
func (in intent) matches(m machine.Record) bool {
	for _, u := range in.Updates {
		if u.ID == m.ID && u.State == m.State && u.Attempts == m.Attempts && u.NextAt.UnixMicro() == m.NextAt.UnixMicro() && u.Reason == m.Reason {
			return true
		}
	}
	return false
}

// lastMatch is the latest of intents that wrote m's delivery state.
func lastMatch(intents []intent, m machine.Record) (intent, bool) {
	for i := len(intents) - 1; i >= 0; i-- {
		if intents[i].matches(m) {
			return intents[i], true
		}
	}
	return intent{}, false
}

// parseIntent reads the JSON of an intent line.
func parseIntent(s string) (intent, error) {
	var in intent
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return in, fmt.Errorf("bad intent %q: %w", s, err)
	}
	return in, nil
}

// TestReadBackStampsTheAnnouncedReading writes a retry to a file as a
// killed child would have, its line lost, and checks that readBack logs
// it at the reading the child announced and under the lease it wrote
// with, not at the kill: the file keeps NextAt only to the microsecond.
func TestReadBackStampsTheAnnouncedReading(t *testing.T) {
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "c.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, _, err := st.Enqueue(ctx, "s", "e1", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := st.ClaimDue(ctx, "child-1", time.Minute, 1)
	if err != nil || len(ls) != 1 {
		t.Fatalf("ClaimDue = %v, %v", ls, err)
	}
	reading := time.Now()
	m := r.Machine()
	m.State, m.Attempts, m.NextAt = machine.Retry, 1, reading.Add(100*time.Millisecond+123*time.Nanosecond)
	ups := store.UpdatesOf([]machine.Record{m})
	if err := st.Save(ctx, ls[0], ups); err != nil {
		t.Fatal(err)
	}
	log := []entry{{"s", invariants.Entry{At: reading.Add(-time.Second), Kind: invariants.Persisted, Worker: "store", ID: "e1", Seq: r.Seq, Record: r.Machine()}}}
	intents := []intent{{At: reading, Exact: true, Worker: "child-1", Token: ls[0].Token, Updates: ups}}
	killedAt := reading.Add(300 * time.Millisecond)
	log, n := readBack(t, st, log, map[string]bool{"e1": true}, intents, killedAt)
	if n != (readBacks{exact: 1}) || len(log) != 2 {
		t.Fatalf("readBack added %+v, log has %d entries; want one at the reading announced", n, len(log))
	}
	e := log[1].e
	if !e.At.Equal(reading) || e.Worker != "child-1" || e.Token != ls[0].Token {
		t.Errorf("read back at %v after the reading, by %s under token %d; want at the reading, by child-1 under %d",
			e.At.Sub(reading), e.Worker, e.Token, ls[0].Token)
	}
}
