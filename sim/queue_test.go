// The event queue runs happenings by instant and breaks ties by scheduling order, and the seeded streams are independent per name: checked by scheduling and drawing directly.
package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestQueueOrder(t *testing.T) {
	type item struct {
		at   time.Duration
		name string
	}
	same := make([]item, 100)
	sameWant := make([]string, 100)
	for i := range same {
		same[i] = item{time.Second, string(rune('A'+i%26)) + string(rune('a'+i/26))}
		sameWant[i] = same[i].name
	}
	tests := []struct {
		name   string
		reason string
		items  []item
		want   []string
	}{
		{
			name:   "one hundred at one instant",
			reason: "ties run in scheduling order, never in heap order",
			items:  same,
			want:   sameWant,
		},
		{
			name:   "instants first, then scheduling order",
			reason: "an earlier instant runs first whenever it was scheduled",
			items: []item{
				{3 * time.Second, "c1"}, {time.Second, "a1"}, {2 * time.Second, "b1"},
				{time.Second, "a2"}, {3 * time.Second, "c2"}, {2 * time.Second, "b2"}, {time.Second, "a3"},
			},
			want: []string{"a1", "a2", "a3", "b1", "b2", "c1", "c2"},
		},
		{
			name:   "sub-nanosecond apart is not the same",
			reason: "one nanosecond earlier wins even if scheduled last",
			items:  []item{{time.Second, "late"}, {time.Second - 1, "early"}},
			want:   []string{"early", "late"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q queue
			var got []string
			for _, it := range tt.items {
				q.schedule(Epoch.Add(it.at), func() { got = append(got, it.name) })
			}
			for q.Len() > 0 {
				q.next().do()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s\nrun order (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

// A happening scheduled while another runs, for the same instant, goes
// after everything already scheduled for that instant: the simulator's
// "at once" never jumps the queue.
func TestQueueScheduleWhileRunning(t *testing.T) {
	var q queue
	var got []string
	at := Epoch.Add(time.Second)
	q.schedule(at, func() {
		got = append(got, "first")
		q.schedule(at, func() { got = append(got, "scheduled by first") })
	})
	q.schedule(at, func() { got = append(got, "second") })
	q.schedule(at.Add(time.Nanosecond), func() { got = append(got, "later") })
	for q.Len() > 0 {
		q.next().do()
	}
	want := []string{"first", "second", "scheduled by first", "later"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run order (-want +got):\n%s", diff)
	}
}

func draws(seed uint64, name string, n int) []uint64 {
	r := stream(seed, name)
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

func TestStream(t *testing.T) {
	const n = 8
	t.Run("same seed and name repeat", func(t *testing.T) {
		if diff := cmp.Diff(draws(7, "channel", n), draws(7, "channel", n)); diff != "" {
			t.Errorf("a stream must be a function of seed and name (-first +second):\n%s", diff)
		}
	})
	tests := []struct {
		name   string
		reason string
		seedA  uint64
		nameA  string
		seedB  uint64
		nameB  string
	}{
		{"two names, one seed", "adding draws in one fake must not shift another's", 1, "producer", 1, "channel"},
		{"restart and channel", "every part of the world has its own sequence", 1, "restart", 1, "channel"},
		{"two seeds, one name", "the seed decides the run", 1, "channel", 2, "channel"},
		{"name prefix", "names are hashed whole", 1, "chan", 1, "channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := draws(tt.seedA, tt.nameA, n), draws(tt.seedB, tt.nameB, n)
			if cmp.Equal(a, b) {
				t.Errorf("%s: stream(%d, %q) and stream(%d, %q) gave the same %d draws %v", tt.reason, tt.seedA, tt.nameA, tt.seedB, tt.nameB, n, a)
			}
		})
	}
}

func TestBetweenAndChance(t *testing.T) {
	r := stream(1, "test")
	for range 1000 {
		d := between(r, 5*time.Millisecond, 50*time.Millisecond)
		if d < 5*time.Millisecond || d > 50*time.Millisecond {
			t.Fatalf("between(5ms, 50ms) = %v, outside the closed range", d)
		}
	}
	if got := between(r, time.Second, time.Second); got != time.Second {
		t.Errorf("between(1s, 1s) = %v, want 1s", got)
	}
	if got := between(r, time.Second, 0); got != time.Second {
		t.Errorf("between(1s, 0) = %v, want the lower bound 1s", got)
	}

	// chance(0) never fires and draws nothing, so a fault rate of zero
	// leaves the stream where it was.
	a, b := stream(3, "x"), stream(3, "x")
	for range 100 {
		if chance(a, 0) {
			t.Fatal("chance(0) fired")
		}
	}
	if a.Uint64() != b.Uint64() {
		t.Error("chance(0) drew from the stream")
	}
	for range 100 {
		if !chance(a, 1) {
			t.Fatal("chance(1) did not fire")
		}
	}
}

// TestSinceEpochIsSub holds the fast path of sinceEpoch to time.Sub, for
// instants near Epoch and far from it, the zero instant included.
func TestSinceEpochIsSub(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []time.Time{{}, Epoch, Epoch.Add(-1), Epoch.Add(math.MaxInt64), Epoch.Add(math.MinInt64),
		time.Unix(math.MaxInt64/2, 0), time.Unix(math.MinInt64/2, 999_999_999)}
	for range 100_000 {
		d := time.Duration(r.Int64())
		if r.IntN(2) == 0 {
			d %= 48 * time.Hour
		}
		cases = append(cases, Epoch.Add(d), Epoch.Add(d).Add(time.Duration(r.Int64N(1e9))*time.Second))
	}
	for _, at := range cases {
		if got, want := sinceEpoch(at), at.Sub(Epoch); got != want {
			t.Fatalf("sinceEpoch(%v) = %d, want %d", at, got, want)
		}
	}
}

// TestEpochAdd holds epochAdd to Epoch.Add, compared as values (==: the
// same wall and monotonic fields and the same location, not just the same
// instant), for offsets near Epoch, at the extremes of a Duration, on
// either side of a second's boundary, and at random.
func TestEpochAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []time.Duration{0, 1, -1, time.Second - 1, time.Second, time.Second + 1, -time.Second - 1, -time.Second,
		-time.Second + 1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
		math.MaxInt64 / time.Second * time.Second, math.MinInt64 / time.Second * time.Second}
	for range 200_000 {
		d := time.Duration(r.Int64())
		switch r.IntN(4) {
		case 0:
			d %= 48 * time.Hour
		case 1:
			d = d / time.Second * time.Second // a whole second
		case 2:
			d = -d
		}
		cases = append(cases, d)
	}
	for _, d := range cases {
		if got, want := epochAdd(d), Epoch.Add(d); got != want {
			t.Fatalf("epochAdd(%d) = %#v, want %#v", d, got, want)
		}
	}
	if h := (happening{key: int64(time.Hour + 1)}); h.at() != Epoch.Add(time.Hour+1) {
		t.Errorf("happening.at = %v, want Epoch.Add(1h1ns)", h.at())
	}
}

// durationPicker returns random durations for the tests that hold an
// offset shortcut to time.Add: a quarter edges (none, one, a second, the
// extremes where sums overflow), a quarter within two days from from, a
// quarter just under the largest, a quarter anywhere.
func durationPicker(r *rand.Rand, from time.Duration) func() time.Duration {
	edges := []time.Duration{0, 1, -1, time.Second, -time.Second, 72 * time.Hour, math.MaxInt64, math.MinInt64,
		math.MaxInt64 - 1, math.MinInt64 + 1, math.MaxInt64 / 2, math.MinInt64 / 2, -time.Hour}
	return func() time.Duration {
		switch r.IntN(4) {
		case 0:
			return edges[r.IntN(len(edges))]
		case 1:
			return from + time.Duration(r.Int64N(int64(48*time.Hour)))
		case 2:
			return math.MaxInt64 - time.Duration(r.Int64N(int64(time.Hour)))
		}
		return time.Duration(r.Uint64())
	}
}

// TestAfterIsAddThenKey holds sim.after to what it replaces, the key of
// now.Add(d), for now near Epoch and far from it and delays from none to
// the extremes, where the sum overflows and the key saturates.
func TestAfterIsAddThenKey(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pick := durationPicker(r, 0)
	for range 200_000 {
		elapsed, d := pick(), pick()
		if r.IntN(2) == 0 {
			d = -d
		}
		s := &sim{now: Epoch.Add(elapsed), elapsed: elapsed}
		if got, want := s.after(d), time.Duration(key(s.now.Add(d))); got != want {
			t.Fatalf("after(%d) at %d = %d, want %d", d, elapsed, got, want)
		}
	}
}

// TestAppendQuoteIsStrconv holds appendQuote to strconv.AppendQuote for
// the workload's IDs, every single byte, and random strings of bytes that
// need quoting and bytes that do not, invalid UTF-8 included.
func TestAppendQuoteIsStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var cases []string
	for i := range 1500 {
		cases = append(cases, EventID(i))
	}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "e"+string([]byte{byte(c)})+"1")
	}
	alphabet := []byte("e019 ~\x7f\"\\\n\t\x00\xff\xc3\xa9\xe2\x82\xac")
	for range 20_000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b), "héllo", "")
	}
	for _, id := range cases {
		prefix := []byte(`{"event":`)
		got := appendQuote(slices.Clone(prefix), id)
		if want := strconv.AppendQuote(slices.Clone(prefix), id); string(got) != string(want) {
			t.Fatalf("appendQuote(%q) = %s, want %s", id, got, want)
		}
	}
}

// TestQueueAgainstSort pushes and pops happenings at random and holds
// every pop to the earliest pending one by (instant, scheduling order),
// found by a plain scan. Some are pushed while the last one popped is
// still in hand, as the simulator does, and must not disturb it. Half are
// acknowledgement timeouts, which have a run of their own: mostly a fixed
// delay after the last one popped, as the producer's are, which join it,
// but some anywhere, which may not.
func TestQueueAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var q queue
	type pend struct {
		key  int64
		seq  int
		what what
	}
	var want []pend
	seq := 0
	var now int64 // the last popped
	schedule := func(k int64) {
		seq++
		p := pend{k, seq, doOffer}
		if r.IntN(2) == 0 {
			p.what = doAckTimeout
			if r.IntN(8) > 0 {
				p.key = now + 30
			}
		}
		q.scheduleOffer(time.Duration(p.key), p.what, seq, 0)
		want = append(want, p)
	}
	for step := range 100_000 {
		if len(want) == 0 || r.IntN(2) == 0 {
			schedule(r.Int64N(50)) // few instants: many ties
			continue
		}
		first := 0
		for i, p := range want {
			if p.key < want[first].key || p.key == want[first].key && p.seq < want[first].seq {
				first = i
			}
		}
		got := q.next()
		popped := want[first]
		want = slices.Delete(want, first, first+1)
		now = popped.key
		// What is scheduled while a happening is handled (before the next
		// next) must not change it, though the slab may move. (Only while
		// few are pending, so that the queue does not grow without end.)
		for range r.IntN(3) * min(1, max(0, 50-len(want))) {
			schedule(popped.key + r.Int64N(50))
		}
		if got.key != popped.key || int(got.event) != popped.seq || got.what != popped.what {
			t.Fatalf("step %d: popped (%d, %d, %v), want (%d, %d, %v)", step, got.key, got.event, got.what, popped.key, popped.seq, popped.what)
		}
	}
}

// TestQueueRunsMeetTheHeap schedules what lands in each run and in the
// heap, each run joined while empty and while not, and holds the pops to
// the order of their instants: a run's first is weighed against the
// others' whenever it changes.
func TestQueueRunsMeetTheHeap(t *testing.T) {
	var q queue
	for _, x := range []struct {
		at   int64
		what what
	}{
		{20, doOffer},      // the first run, empty
		{10, doOffer},      // the heap: earlier than the run's last
		{5, doAckTimeout},  // the timeouts' run, empty
		{25, doOffer},      // the first run, not empty
		{7, doAckTimeout},  // the timeouts' run, not empty
		{6, doAckTimeout},  // the heap: earlier than the timeouts' last
		{30, doAckTimeout}, // the timeouts' run again
	} {
		q.scheduleOffer(time.Duration(x.at), x.what, int(x.at), 0)
	}
	var got []int64
	for q.Len() > 0 {
		got = append(got, q.next().key)
	}
	if want := []int64{5, 6, 7, 10, 20, 25, 30}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
}

// TestAtoiIsStrconv holds atoi to strconv.Atoi, value and error, on
// numbers, signs, junk and lengths around the fast path's nine digits.
func TestAtoiIsStrconv(t *testing.T) {
	cases := []string{"", "0", "01", "007", "123456789", "1234567890", "99999999999999999999", "+1", "-1", "1a", "a1", " 1", "٣"}
	r := rand.New(rand.NewPCG(5, 6))
	const alphabet = "0123456789+-x "
	for range 20_000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			if r.IntN(10) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = byte('0' + r.IntN(10))
			}
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		got, gerr := atoi(s)
		want, werr := strconv.Atoi(s)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("atoi(%q) = %d, %v; strconv.Atoi: %d, %v", s, got, gerr, want, werr)
		}
	}
}

// TestEventIDsAreEventID holds the simulator's own formatting of the
// workload's IDs, kept across runs, to EventID, below and past the three
// padded digits, whether a buffer starts empty or extends what it has.
func TestEventIDsAreEventID(t *testing.T) {
	var b buffers
	for _, n := range []int{0, 1, 9, 10, 99, 100, 5, 1001, 1500, 20} {
		got := b.eventIDs(n)
		if len(got) != n {
			t.Fatalf("eventIDs(%d) has %d IDs", n, len(got))
		}
		for i, id := range got {
			if want := EventID(i); id != want {
				t.Fatalf("eventIDs(%d)[%d] = %q, want %q", n, i, id, want)
			}
		}
	}
}

// TestStreamIndexIsStreamName holds streamIndex to StreamName for worlds
// of one stream, of up to 99 (the fast path) and of more.
// TestEventIndexIsAtoi holds eventIndex, fast path included, to the
// plain parse it shortcuts: the same index for every ID of workloads of
// several sizes and for odd spellings, the same panic for the rest.
func TestEventIndexIsAtoi(t *testing.T) {
	plain := func(s *sim, id string) (i int, ok bool) {
		n, err := strconv.Atoi(strings.TrimPrefix(id, "e"))
		return n - 1, err == nil && n >= 1 && n <= len(s.ids)
	}
	try := func(s *sim, id string) (i int, ok bool) {
		defer func() {
			if p := recover(); p != nil {
				if want := fmt.Sprintf("sim: %q is not an event of the workload", id); p != want {
					t.Fatalf("eventIndex(%q) panicked with %v, want %q", id, p, want)
				}
				ok = false
			}
		}()
		return s.eventIndex(id), true
	}
	odd := []string{"e000", "e0", "e1", "e01", "e0001", "e999", "e1000", "e+01", "e-01", "e 01", "E001", "x001", "e/01", "e:01", "e", "", "001", "ee01", "e00a"}
	for _, n := range []int{0, 1, 9, 10, 99, 100, 999, 1000, 1500} {
		s := &sim{ids: (&buffers{}).eventIDs(n)}
		cases := append(slices.Clone(odd), s.ids...)
		for _, id := range cases {
			wantI, wantOK := plain(s, id)
			if gotI, gotOK := try(s, id); gotOK != wantOK || (wantOK && gotI != wantI) {
				t.Fatalf("with %d events, eventIndex(%q) = %d, %v; want %d, %v", n, id, gotI, gotOK, wantI, wantOK)
			}
		}
	}
}

func TestStreamIndexIsStreamName(t *testing.T) {
	for _, n := range []int{1, 2, 10, 99, 100, 150} {
		s := &sim{streams: make([]string, n)}
		for i := range n {
			s.streams[i] = StreamName(i, n)
		}
		for i, name := range s.streams {
			if got := s.streamIndex(name); got != i {
				t.Fatalf("with %d streams, streamIndex(%q) = %d, want %d", n, name, got, i)
			}
		}
	}
}

// TestQueueWakesAgainstSort holds the queue with nodes' wakes, kept apart
// from the heap, to the plain order: every happening ever scheduled, wakes
// superseded by a later wake of their node or by a crash included, pops in
// (instant, scheduling order), found by a scan, and Len counts them all.
func TestQueueWakesAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var q queue
	nodes := []*node{{idx: 0}, {idx: 1}, {idx: 2}}
	type pend struct {
		key      int64
		seq      int
		node     *node // a wake's; nil for an offer
		wake, id int
	}
	var want []pend
	// stale marks node n's wakes superseded: they pop doing nothing.
	stale := func(n *node) {
		for i := range want {
			if want[i].node == n {
				want[i].node, want[i].wake = nil, -1
			}
		}
	}
	seq, wakes := 0, 0
	var now int64
	for step := range 200_000 {
		k := now + r.Int64N(40) // few instants: many ties
		switch op := r.IntN(8); {
		case op < 2 && len(want) < 60:
			seq++
			q.scheduleOffer(time.Duration(k), doOffer, seq, 0)
			want = append(want, pend{key: k, seq: seq, id: seq})
			continue
		case op < 4 && len(want) < 60:
			seq++
			wakes++
			n := nodes[r.IntN(len(nodes))]
			stale(n)
			q.scheduleWake(time.Duration(k), n, 1, wakes)
			want = append(want, pend{key: k, seq: seq, node: n, wake: wakes})
			continue
		case op == 4:
			i := r.IntN(len(nodes))
			stale(nodes[i])
			q.supersede(i) // a crash: the wake stays pending, stale
			continue
		}
		if q.Len() != len(want) {
			t.Fatalf("step %d: Len %d, want %d", step, q.Len(), len(want))
		}
		if len(want) == 0 {
			continue
		}
		first := 0
		for i, p := range want {
			if p.key < want[first].key || p.key == want[first].key && p.seq < want[first].seq {
				first = i
			}
		}
		popped := want[first]
		want = slices.Delete(want, first, first+1)
		got := q.next()
		now = got.key
		switch {
		case got.key != popped.key:
			t.Fatalf("step %d: popped instant %d, want %d", step, got.key, popped.key)
		case popped.wake == -1 && (got.what != doNothing || !got.background):
			t.Fatalf("step %d: popped %v, want a superseded wake", step, got.what)
		case popped.wake == -1:
		case popped.node == nil && (got.what != doOffer || int(got.event) != popped.id):
			t.Fatalf("step %d: popped %v event %d, want offer %d", step, got.what, got.event, popped.id)
		case popped.node != nil && (got.what != doWake || got.n != popped.node || int(got.wake) != popped.wake || !got.background):
			t.Fatalf("step %d: popped %v wake %d, want wake %d of node %d", step, got.what, got.wake, popped.wake, popped.node.idx)
		}
	}
}

// TestReusedStreamsAreStream holds the streams a run takes from its
// buffers, reseeded after a past run drew from them, to the generators
// stream makes anew: the same draws, stream by stream.
func TestReusedStreamsAreStream(t *testing.T) {
	var b buffers
	for seed := range uint64(20) {
		r := b.streams(seed)
		for i, name := range streamNames {
			if got, want := drawsFrom(r[i], 8), draws(seed, name, 8); !slices.Equal(got, want) {
				t.Errorf("seed %d, stream %q: reused draws %v, want %v", seed, name, got, want)
			}
			drawsFrom(r[i], int(seed)) // a past run's draws, left behind
		}
	}
}

func drawsFrom(r *rand.Rand, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

// TestClockIsNowAdd holds sim.clock to what it replaces, now.Add(skew),
// for now near Epoch and far from it, and skews from none to overflowing.
func TestClockIsNowAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	pick := durationPicker(r, -24*time.Hour)
	for range 200_000 {
		elapsed, skew := pick(), pick()
		s := &sim{now: epochAdd(elapsed), elapsed: elapsed}
		if got, want := s.clock(&node{skew: skew}), s.now.Add(skew); got != want {
			t.Fatalf("clock with skew %d at %d = %#v, want %#v", skew, elapsed, got, want)
		}
	}
}
