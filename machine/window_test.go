// Window tests prove the idempotency window: a settled record stays while
// it is among the last KeepSettled settled and younger than
// KeepSettledFor, and is forgotten after (an Accept of its ID is then a new
// event); an adopted record is forgotten as soon as it settles; Recover
// keeps only the window's newest; and the two machine fixes of issue 13:
// an Accept at the zero time is misuse, and Recover kills an oversized
// record as Adopt does.
package machine_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
)

func windowConfig(keep int, keepFor time.Duration) machine.Config {
	c := machine.DefaultConfig()
	c.KeepSettled, c.KeepSettledFor = keep, keepFor
	return c
}

func newMachine(t *testing.T, cfg machine.Config) *machine.Machine {
	t.Helper()
	m, err := machine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func step(t *testing.T, m *machine.Machine, in machine.Input) machine.Batch {
	t.Helper()
	b, err := m.Step(in)
	if err != nil {
		t.Fatalf("%s: %v", in.Format(epoch), err)
	}
	return b
}

// deliver accepts id at at and delivers its first attempt.
func deliver(t *testing.T, m *machine.Machine, id string, at time.Time) machine.Ack {
	t.Helper()
	b := step(t, m, machine.Accept{At: at, ID: id, Payload: []byte(id)})
	if len(b.Sends) != 1 {
		t.Fatalf("accept %s sent %v; want one attempt", id, b.Sends)
	}
	step(t, m, machine.Result{At: at, ID: id, Attempt: 1, Outcome: machine.OutcomeDelivered})
	return b.Acks[0]
}

func seqIDs(recs []machine.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s/%d", r.ID, r.Seq))
	}
	return out
}

func TestWindowByCount(t *testing.T) {
	m := newMachine(t, windowConfig(2, 0))
	for i, id := range []string{"e1", "e2", "e3"} {
		deliver(t, m, id, epoch.Add(time.Duration(i)*time.Second))
	}
	if diff := cmp.Diff([]string{"e2/2", "e3/3"}, seqIDs(m.Records())); diff != "" {
		t.Errorf("records after 3 settled with KeepSettled 2 (-want +got):\n%s", diff)
	}
	// e2 is inside the window: a duplicate. e1 is out: a new event.
	b := step(t, m, machine.Accept{At: epoch.Add(5 * time.Second), ID: "e2"})
	if diff := cmp.Diff([]machine.Ack{{ID: "e2", Seq: 2, Duplicate: true}}, b.Acks); diff != "" {
		t.Errorf("resend inside the window (-want +got):\n%s", diff)
	}
	b = step(t, m, machine.Accept{At: epoch.Add(5 * time.Second), ID: "e1"})
	if diff := cmp.Diff([]machine.Ack{{ID: "e1", Seq: 4}}, b.Acks); diff != "" {
		t.Errorf("resend after the window (-want +got):\n%s", diff)
	}
	if len(b.Sends) != 1 || b.Sends[0].Seq != 4 {
		t.Errorf("resend after the window sent %v; want e1 again as seq 4", b.Sends)
	}
}

func TestWindowByTime(t *testing.T) {
	m := newMachine(t, windowConfig(0, 10*time.Second))
	deliver(t, m, "e1", epoch)
	b := step(t, m, machine.Accept{At: epoch.Add(9 * time.Second), ID: "e1"})
	if len(b.Acks) != 1 || !b.Acks[0].Duplicate {
		t.Errorf("resend 9s after settling: acks %v; want a duplicate", b.Acks)
	}
	step(t, m, machine.Tick{At: epoch.Add(10 * time.Second)})
	if got := seqIDs(m.Records()); len(got) != 0 {
		t.Errorf("records 10s after settling with KeepSettledFor 10s: %v; want none", got)
	}
	b = step(t, m, machine.Accept{At: epoch.Add(10 * time.Second), ID: "e1"})
	if diff := cmp.Diff([]machine.Ack{{ID: "e1", Seq: 2}}, b.Acks); diff != "" {
		t.Errorf("resend after the window (-want +got):\n%s", diff)
	}
}

// With no window (the zero Config), nothing is ever forgotten: the
// behaviour of the machine before the window existed.
func TestNoWindowKeepsEverything(t *testing.T) {
	cfg := windowConfig(0, 0)
	m := newMachine(t, cfg)
	for i := range 300 {
		deliver(t, m, fmt.Sprintf("e%d", i), epoch.Add(time.Duration(i)*time.Hour))
	}
	step(t, m, machine.Adopt{At: epoch.Add(400 * time.Hour), Record: machine.Record{
		ID: "a", Seq: 301, AcceptedAt: epoch.Add(400 * time.Hour), State: machine.Pending}})
	step(t, m, machine.Result{At: epoch.Add(400 * time.Hour), ID: "a", Attempt: 1, Outcome: machine.OutcomeDelivered})
	if got := len(m.Records()); got != 301 {
		t.Errorf("%d records with no window; want all 301", got)
	}
}

func TestWindowForgetsAdoptedAtOnce(t *testing.T) {
	m := newMachine(t, windowConfig(100, 0))
	deliver(t, m, "e1", epoch)
	step(t, m, machine.Adopt{At: epoch, Record: machine.Record{ID: "a2", Seq: 2, AcceptedAt: epoch, State: machine.Pending}})
	b := step(t, m, machine.Result{At: epoch, ID: "a2", Attempt: 1, Outcome: machine.OutcomeDelivered})
	// The store still gets the settled record.
	if len(b.Persist) != 1 || b.Persist[0].ID != "a2" || b.Persist[0].State != machine.Delivered {
		t.Errorf("delivery of an adopted record persisted %v; want a2 delivered", b.Persist)
	}
	if diff := cmp.Diff([]string{"e1/1"}, seqIDs(m.Records())); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	b = step(t, m, machine.Result{At: epoch, ID: "a2", Attempt: 1, Outcome: machine.OutcomeDelivered})
	if b.Ignored == "" {
		t.Errorf("a late result for a forgotten record was not ignored: %s", b.Format(epoch))
	}
}

func TestRecoverKeepsTheWindowsNewest(t *testing.T) {
	var recs []machine.Record
	for i := 5; i >= 1; i-- {
		recs = append(recs, machine.Record{ID: fmt.Sprintf("e%d", i), Seq: uint64(i), AcceptedAt: epoch,
			State: machine.Delivered, Attempts: 1, NextAt: epoch})
	}
	recs = append(recs, machine.Record{ID: "w", Seq: 6, AcceptedAt: epoch, State: machine.Pending, NextAt: epoch})
	m, _, err := machine.Recover(windowConfig(2, 0), epoch, recs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e4/4", "e5/5", "w/6"}, seqIDs(m.Records())); diff != "" {
		t.Errorf("records after Recover with KeepSettled 2 (-want +got):\n%s", diff)
	}
}

// TestWindowBoundsMemory runs many accept-deliver cycles through a small
// window and checks that what the machine holds stays within it.
func TestWindowBoundsMemory(t *testing.T) {
	m := newMachine(t, windowConfig(50, 0))
	for i := range 10_000 {
		deliver(t, m, fmt.Sprintf("e%d", i), epoch.Add(time.Duration(i)*time.Millisecond))
	}
	recs := m.Records()
	if len(recs) != 50 || recs[0].ID != "e9950" {
		t.Errorf("after 10,000 settled with KeepSettled 50: %d records from %s; want 50 from e9950", len(recs), recs[0].ID)
	}
}

func TestWindowConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*machine.Config)
		field  string
	}{
		{"negative count", func(c *machine.Config) { c.KeepSettled = -1 }, "KeepSettled"},
		{"negative duration", func(c *machine.Config) { c.KeepSettledFor = -time.Second }, "KeepSettledFor"},
	} {
		cfg := machine.DefaultConfig()
		tt.change(&cfg)
		if got := describeConfigError(cfg.Validate()); got != (configError{Field: tt.field, Wraps: true}) {
			t.Errorf("%s: %+v; want field %s", tt.name, got, tt.field)
		}
	}
}

// An accept at the zero time would make a record that Recover refuses
// ("no acceptance time"), so it is misuse, and changes nothing.
func TestAcceptAtZeroTimeIsMisuse(t *testing.T) {
	m := newMachine(t, machine.DefaultConfig())
	_, err := m.Step(machine.Accept{ID: "e1"})
	if !errors.Is(err, machine.ErrBadInput) {
		t.Fatalf("accept at the zero time: error %v; want ErrBadInput", err)
	}
	if len(m.Records()) != 0 || m.Stats() != (machine.Stats{}) {
		t.Errorf("a refused accept changed the machine: %v, %+v", m.Records(), m.Stats())
	}
}

// A record whose payload is over MaxPayloadBytes (the limit was lowered,
// or a shared store took it) cannot be sent: Recover makes it dead
// (rejected), as Adopt does, and it says nothing about the channel.
func TestRecoverOversizedPayloadIsRejected(t *testing.T) {
	cfg := machine.DefaultConfig()
	cfg.MaxPayloadBytes = 2
	recs := []machine.Record{
		{ID: "big", Seq: 1, Payload: []byte("abc"), AcceptedAt: epoch, State: machine.Parked, Attempts: 1, NextAt: epoch},
		{ID: "ok", Seq: 2, Payload: []byte("ab"), AcceptedAt: epoch, State: machine.Pending, NextAt: epoch},
	}
	m, b, err := machine.Recover(cfg, epoch, recs)
	if err != nil {
		t.Fatal(err)
	}
	want := "persist big seq=1 dead attempts=1 reason=rejected\n" +
		"persist ok seq=2 pending attempts=1 next=30s\n" +
		"send ok#1 seq=2\n" +
		"wake 30s\n"
	if diff := cmp.Diff(want, b.Format(epoch)); diff != "" {
		t.Errorf("Recover batch (-want +got):\n%s", diff)
	}
	if m.Circuit() != machine.Closed {
		t.Errorf("circuit %s; the oversized parked record must not open it", m.Circuit())
	}
}
