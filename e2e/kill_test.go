// Tests that courier keeps its promises when its process is killed: the
// courier side (Service, SQLite file, HTTP channel) runs in a child process,
// this test binary re-executed, that publishes and delivers and is killed
// with SIGKILL at seeded random moments, at least 20 times, and restarted
// on the same file; the receiver (the kit, deduplicating in memory) lives
// on in the parent, behind the fault-injecting proxy. After a last run that
// drains, invariants.Check judges each stream's log (the children's
// entries, the receiver's, and what the file shows a kill cut off), and
// the same guarantees are asserted directly from what the parent knows for
// sure: every acknowledged event is in the file and delivered, every event
// in the file was applied exactly once, each stream in sequence order.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/worker"
)

// The child's environment: which run it is, its file, where to send, and
// whether it only drains.
const (
	childEnv = "COURIER_E2E_CHILD"
	dbEnv    = "COURIER_E2E_DB"
	urlEnv   = "COURIER_E2E_URL"
	drainEnv = "COURIER_E2E_DRAIN"
)

const (
	killStreams  = 4
	childEvents  = 16 // published by each killed child, then it only delivers
	childLeaseTT = 400 * time.Millisecond
	// childStoreTimeout is the Service's StoreTimeout, set so that the
	// child's stepClock knows when each step's context was made.
	childStoreTimeout = 10 * time.Second
)

var kills = 22

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

func say(format string, args ...any) { fmt.Printf("E2E "+format+" .\n", args...) }

// childMain is the courier side: it runs a Service on the file and
// publishes childEvents events (printing "ack ID SEQ" once Publish
// returned nil, "offer ID" before), then delivers until killed, or, when
// draining, until SIGTERM.
func childMain() int {
	run, err := strconv.Atoi(os.Getenv(childEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: bad %s: %v\n", childEnv, err)
		return 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	st, err := sqlitestore.Open(ctx, os.Getenv(dbEnv), sqlitestore.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: open: %v\n", err)
		return 3
	}
	defer st.Close()
	ch, err := newChannel(os.Getenv(urlEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: channel: %v\n", err)
		return 3
	}
	pol := policy()
	owner := fmt.Sprintf("child-%d", run)
	steps := &stepClock{timeout: childStoreTimeout}
	rec := newRecorder()
	rec.sink = func(stream string, e invariants.Entry) {
		b, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		say("log %s %s", stream, b)
	}
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: owner, Store: &recStore{Store: st, rec: rec, steps: steps}, MaxStreams: killStreams,
			LeaseTTL: childLeaseTT, Poll: 20 * time.Millisecond,
			Policy:   func(string) (machine.Config, error) { return pol, nil },
			Observer: steps.observer(rec.observer(owner)),
		},
		Channel:         ch,
		StoreTimeout:    childStoreTimeout,
		ShutdownTimeout: time.Second,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: %v\n", err)
		return 3
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	say("ready")
	if os.Getenv(drainEnv) == "" {
		rnd := rand.New(rand.NewPCG(uint64(run), 5))
		for i := range childEvents {
			stream := fmt.Sprintf("k%d", rnd.IntN(killStreams))
			id := fmt.Sprintf("r%d-e%d", run, i)
			say("offer %s", id)
			rc, err := svc.Publish(ctx, stream, id, fmt.Appendf(nil, `{"run":%d,"i":%d}`, run, i))
			if err != nil {
				fmt.Fprintf(os.Stderr, "child: publish %s: %v\n", id, err)
				return 3
			}
			say("ack %s %d", id, rc.Seq)
			time.Sleep(time.Duration(rnd.IntN(30)) * time.Millisecond)
		}
	}
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "child: Run: %v\n", err)
		return 3
	}
	return 0
}

// child is one run of the courier side, seen from the parent.
type child struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	ready chan struct{}
	done  chan struct{}
	// signalled is when end's signal had been sent: a killed child wrote
	// nothing after it.
	signalled time.Time
}

func startChild(t *testing.T, run int, env []string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), fmt.Sprintf("%s=%d", childEnv, run))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		once := sync.OnceFunc(func() { close(c.ready) })
		defer once()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// Only whole lines count: a line cut by the kill has no " ." end.
			line, ok := strings.CutSuffix(sc.Text(), " .")
			if !ok || !strings.HasPrefix(line, "E2E ") {
				continue
			}
			c.mu.Lock()
			c.lines = append(c.lines, strings.TrimPrefix(line, "E2E "))
			c.mu.Unlock()
			once()
		}
	}()
	select {
	case <-c.ready:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("child %d never got ready", run)
	}
	return c
}

// end stops the child with sig and returns what it printed.
func (c *child) end(t *testing.T, sig syscall.Signal) []string {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	c.signalled = time.Now()
	select {
	case <-c.done:
	case <-time.After(waitLimit):
		_ = c.cmd.Process.Kill()
		<-c.done
		_ = c.cmd.Wait()
		t.Fatalf("the child was still running %v after %v; killed", waitLimit, sig)
	}
	err := c.cmd.Wait()
	if sig == syscall.SIGTERM && err != nil {
		t.Errorf("the draining child did not shut down cleanly: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines
}

func TestKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kill loop: skipped with -short")
	}
	seed := *e2eSeed
	defer func() {
		if t.Failed() {
			t.Logf("seed %d: replay the kill moments with go test ./e2e -run TestKillLoop -e2e.seed=%d -v", seed, seed)
		}
	}()
	began := time.Now()
	rec := newRecorder()
	recv := newReceiver(t, rec)
	px, err := newProxy(recv.URL, seed, faultPlan{
		burst: 0.02, burstLen: 4, tooMany: 0.02, drop: 0.05, slow: 0.02,
		slowFor: attemptTimeout + 100*time.Millisecond, end: began.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	db := filepath.Join(t.TempDir(), "courier.db")
	env := []string{dbEnv + "=" + db, urlEnv + "=" + px.URL()}

	rnd := rand.New(rand.NewPCG(seed, 3))
	acked := map[string]uint64{} // ID -> Seq the child was told
	offered := map[string]bool{}
	var childLog []entry    // what the children printed, in their order
	var intents []intent    // the Saves the latest child announced, in its order
	var announced readBacks // every child's intents, by stamp (exact or bound)
	learn := func(lines []string) {
		for _, l := range lines {
			f := strings.Fields(l)
			switch {
			case len(f) > 0 && f[0] == "intent-wrong":
				t.Errorf("a child's intent disagrees with its worker: %s", l)
			case len(f) >= 3 && f[0] == "intent":
				in, err := parseIntent(strings.SplitN(l, " ", 3)[2])
				if err != nil {
					t.Fatal(err)
				}
				intents = append(intents, in)
				if in.Exact {
					announced.exact++
				} else {
					announced.bound++
				}
			case len(f) == 3 && f[0] == "ack":
				seq, err := strconv.ParseUint(f[2], 10, 64)
				if err != nil {
					t.Fatalf("bad line %q", l)
				}
				acked[f[1]] = seq
			case len(f) == 2 && f[0] == "offer":
				offered[f[1]] = true
			case len(f) >= 3 && f[0] == "log":
				// The entry's JSON may hold spaces (a Restarted's
				// "took over the stream"): it is the rest of the line.
				var e invariants.Entry
				if err := json.Unmarshal([]byte(strings.SplitN(l, " ", 3)[2]), &e); err != nil {
					t.Fatalf("bad line %q: %v", l, err)
				}
				childLog = append(childLog, entry{f[1], e})
			}
		}
	}
	st, err := sqlitestore.Open(t.Context(), db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var lost readBacks
	for run := 1; run <= kills; run++ {
		c := startChild(t, run, env)
		time.Sleep(50*time.Millisecond + time.Duration(rnd.Int64N(int64(600*time.Millisecond))))
		intents = nil
		learn(c.end(t, syscall.SIGKILL))
		var n readBacks
		childLog, n = readBack(t, st, childLog, offered, intents, c.signalled)
		lost.add(n)
	}
	// The last run drains: it publishes nothing and delivers until every
	// event in the file has settled.
	c := startChild(t, kills+1, append(env, drainEnv+"=1"))
	deadline := time.Now().Add(slowdown * 20 * time.Second)
	for !settledAll(t, st, offered) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	learn(c.end(t, syscall.SIGTERM))
	counts := px.Close()
	judgeKillLog(t, st, rec, childLog)
	t.Logf("the children announced %d Saves at the worker's reading, %d at a bound; durable writes whose line a kill cut off, read back from the file: %d enqueues, and %d Saves at the reading announced, %d at the bound, %d at the kill",
		announced.exact, announced.bound, lost.enqueued, lost.exact, lost.bound, lost.killed)

	judgeKillLoop(t, st, acked, offered, rec)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	t.Logf("seed %d: %d SIGKILLs + 1 draining run in %v: %d events offered, %d acknowledged, %d applied, %d duplicates absorbed by the receiver, %d fenced; proxy: %+v",
		seed, kills, time.Since(began).Round(time.Millisecond), len(offered), len(acked), len(rec.applied), rec.dups, rec.fenced, counts)
}

// settledAll reports whether every offered event that reached the file is
// delivered or dead.
func settledAll(t *testing.T, st *sqlitestore.Store, offered map[string]bool) bool {
	for id := range offered {
		r, err := st.Get(t.Context(), id)
		if err == nil && !r.State.Terminal() {
			return false
		}
	}
	return true
}

// judgeKillLoop asserts the guarantees directly, from what the parent
// knows for sure (the children's acknowledgements, the receiver's
// applications, the file's final content), without the log's merging and
// read-back that invariants.Check depends on here.
func judgeKillLoop(t *testing.T, st *sqlitestore.Store, acked map[string]uint64, offered map[string]bool, rec *recorder) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	bySeq := map[string]map[uint64]string{} // stream -> seq -> ID in the file
	inFile := map[string]bool{}
	for id := range offered {
		r, err := st.Get(t.Context(), id)
		if err != nil {
			if seq, ok := acked[id]; ok {
				t.Errorf("lost: %s was acknowledged (seq %d) and is not in the file: %v", id, seq, err)
			}
			continue // offered, killed before it was stored
		}
		inFile[id] = true
		if seq, ok := acked[id]; ok && r.Seq != seq {
			t.Errorf("%s was acknowledged with seq %d; the file holds seq %d", id, seq, r.Seq)
		}
		if r.State != machine.Delivered {
			t.Errorf("%s is %s (%s, %d attempts) after the drain; want delivered", id, r.State, r.Reason, r.Attempts)
		}
		if bySeq[r.Stream] == nil {
			bySeq[r.Stream] = map[uint64]string{}
		}
		bySeq[r.Stream][r.Seq] = id
		if n := rec.applied[id]; n != 1 {
			t.Errorf("%s (stream %s seq %d) was applied %d times; want once", id, r.Stream, r.Seq, n)
		}
	}
	for id, n := range rec.applied {
		if !inFile[id] {
			t.Errorf("%s was applied %d times and is not in the file", id, n)
		}
	}
	for stream, seqs := range rec.seqs {
		for i, seq := range seqs {
			if i > 0 && seq <= seqs[i-1] {
				t.Errorf("stream %s: seq %d applied after seq %d", stream, seq, seqs[i-1])
			}
		}
		if len(seqs) != len(bySeq[stream]) {
			t.Errorf("stream %s: %d applied, the file holds %d", stream, len(seqs), len(bySeq[stream]))
		}
	}
	if len(acked) < kills*childEvents/4 {
		t.Errorf("only %d events acknowledged over %d runs: the children hardly published", len(acked), kills)
	}
}

// judgeKillLog merges the children's logs with the receiver's by time
// (one host, one clock; each log kept in its own order) and has invariants.Check judge each stream. A
// child prints an entry only after the call it records returned, so a kill
// can lose the line of a last durable write: the log may then miss a
// persist that the next child's rebuild saw, never invent one.
func judgeKillLog(t *testing.T, st *sqlitestore.Store, rec *recorder, childLog []entry) {
	t.Helper()
	rec.mu.Lock()
	all := merge(childLog, rec.entries)
	rec.mu.Unlock()
	runs := map[string]*invariants.Run{}
	ids := map[string][]string{}
	seen := map[string]bool{}
	pol := policy()
	for _, en := range all {
		run := runs[en.stream]
		if run == nil {
			run = &invariants.Run{Policy: pol, Finished: true, ReceiverFences: true,
				Skew:  50 * time.Millisecond,
				Slack: time.Minute, // kills and lease handovers hold events up
			}
			runs[en.stream] = run
		}
		run.Add(en.e)
		if en.e.Kind == invariants.Persisted && !seen[en.e.ID] {
			seen[en.e.ID] = true
			ids[en.stream] = append(ids[en.stream], en.e.ID)
		}
	}
	for stream, run := range runs {
		run.Final = finalRecords(t.Context(), t, st, ids[stream])
		for _, v := range invariants.Check(*run) {
			t.Errorf("stream %s: %s", stream, v)
		}
	}
	t.Logf("invariants.Check judged %d streams, %d entries (%d printed by the children)", len(runs), len(all), len(childLog))
}

// merge interleaves two logs by time, keeping each in its own order: a
// child stamps its worker's entries with the instant its step began, so
// its log is in the order things happened but not sorted by At.
func merge(a, b []entry) []entry {
	out := make([]entry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].e.At.Before(a[0].e.At) {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// readBack adds to the log what the killed child made durable but could
// not print: the kill can fall between a write's return and its line. The
// parent reads every record the log knows of (and every offered ID) from
// the file, and where the file is ahead of the log, logs the record as
// persisted by the child that held the stream, before the next child
// starts. It returns the longer log and how many entries it added, by how
// each was stamped.
//
// Such an entry is stamped with the worker's clock reading for the step
// that made the write, as its lost line would have been: the child
// announced it, with the records and the lease, before the write (the
// latest of its intents that wrote what the file holds). A Save made
// before any event of its step (an Advance's timer) was announced with the
// instant it was called, a bound no earlier than the reading; a write
// with no intent (none expected) is stamped killedAt, the instant the
// SIGKILL had been sent, the latest bound the parent knows. A bound is
// not the reading: stamping it when the parent reads the write back (under
// load 60-200ms after the kill) or at the kill (under load, more than
// the checker's Skew after the write) had the checker judge the write at
// a moment the child could not have made it: after the lease it wrote
// under expired, or after the NextAt it had just computed ("the next is
// due -252ms later").
func readBack(t *testing.T, st *sqlitestore.Store, log []entry, offered map[string]bool, intents []intent, killedAt time.Time) ([]entry, readBacks) {
	t.Helper()
	last := map[string]machine.Record{} // by ID: the latest persisted in the log
	stream := map[string]string{}
	holder := map[string]invariants.Entry{} // by stream: the latest lease in the log
	for _, en := range log {
		switch en.e.Kind {
		case invariants.Persisted:
			last[en.e.ID], stream[en.e.ID] = en.e.Record, en.stream
		case invariants.LeaseGranted, invariants.LeaseRenewed:
			holder[en.stream] = en.e
		}
	}
	var n readBacks
	for _, id := range slices.Sorted(maps.Keys(offered)) {
		r, err := st.Get(t.Context(), id)
		if err != nil {
			continue // never stored
		}
		m := r.Machine()
		prev, known := last[id]
		e := invariants.Entry{At: killedAt, Kind: invariants.Persisted, ID: id, Seq: m.Seq, Record: m,
			Detail: "read back from the file after the kill, stamped at the kill"}
		switch {
		case !known:
			e.Worker = "store" // enqueued; the kill cut its lines off
			if m.State != machine.Pending || m.Attempts != 0 {
				t.Fatalf("%s: the log never saw it enqueued, and the file holds it %s after %d attempts", id, m.State, m.Attempts)
			}
			n.enqueued++
		case prev.State == m.State && prev.Attempts == m.Attempts && prev.Reason == m.Reason:
			continue
		default:
			n.stamp(&e, holder[stream[id]], intents)
		}
		log = append(log, entry{r.Stream, e})
	}
	return log, n
}

// readBacks counts readBack's entries: the enqueues, and the Saves by
// their stamp (the worker's reading, a bound the child announced, the
// kill).
type readBacks struct{ enqueued, exact, bound, killed int }

func (n *readBacks) add(o readBacks) {
	n.enqueued, n.exact, n.bound, n.killed = n.enqueued+o.enqueued, n.exact+o.exact, n.bound+o.bound, n.killed+o.killed
}

// stamp sets the time and lease of a write read back: the announced ones
// of the latest intent that wrote it, else the kill and the stream's
// latest lease in the log (h).
func (n *readBacks) stamp(e *invariants.Entry, h invariants.Entry, intents []intent) {
	in, ok := lastMatch(intents, e.Record)
	switch {
	case !ok:
		e.Worker, e.Token = h.Worker, h.Token
		n.killed++
		return
	case in.Exact:
		e.Detail = "read back from the file after the kill, at the reading its child announced"
		n.exact++
	default:
		e.Detail = "read back from the file after the kill, at the bound its child announced"
		n.bound++
	}
	e.At, e.Worker, e.Token = in.At, in.Worker, in.Token
}
