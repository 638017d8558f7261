package killtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// ChildEnv, when set in a test binary's environment, makes the kill test
// run as the child, numbered by its value.
const ChildEnv = "COURIER_KILLTEST_CHILD"

// LeaseTTL is the child's lease length: short, so that the parent can
// take a dead child's streams soon after the kill.
const LeaseTTL = 300 * time.Millisecond

// Open opens the backend under test; close releases it.
type Open func(ctx context.Context) (s store.Store, close func(), err error)

// Config is one kill loop.
type Config struct {
	Kills int
	Seed  uint64
	// MaxDelay bounds how long after it is ready a child is killed (drawn
	// from 10ms up); 0 means 160ms.
	MaxDelay time.Duration
	// Test is the name of the test function that calls Loop, so the child
	// runs only it; Env is what the child needs to open the same store.
	Test string
	Env  []string
}

// Child returns true if this process is the child; it then runs the
// child's work until it is killed (it never returns normally).
func Child(open Open) bool {
	run := os.Getenv(ChildEnv)
	if run == "" {
		return false
	}
	n, err := strconv.Atoi(run)
	if err != nil {
		fail("bad %s %q", ChildEnv, run)
	}
	child(n, open)
	return true
}

func fail(format string, args ...any) {
	fmt.Printf("KILL error "+format+"\n", args...)
	os.Exit(3)
}

func say(format string, args ...any) { fmt.Printf("KILL "+format+"\n", args...) }

// child enqueues, claims and saves through the store until killed.
func child(run int, open Open) {
	ctx := context.Background()
	s, _, err := open(ctx)
	if err != nil {
		fail("open: %v", err)
	}
	rng := rand.New(rand.NewPCG(uint64(run), 7))
	owner := fmt.Sprintf("child-%d", run)
	say("ready")
	for n := 0; ; n++ {
		for range 1 + rng.IntN(3) {
			id := fmt.Sprintf("r%d-%d", run, n)
			n++
			if _, _, err := s.Enqueue(ctx, fmt.Sprintf("s%d", rng.IntN(4)), id, []byte("payload "+id)); err != nil {
				fail("enqueue %s: %v", id, err)
			}
			say("ack %s", id)
		}
		ls, err := s.ClaimDue(ctx, owner, LeaseTTL, 2)
		if err != nil {
			fail("claim: %v", err)
		}
		for _, l := range ls {
			say("lease %s %s %d %d", l.Stream, l.Owner, l.Token, l.Expires.UnixMicro())
			work(ctx, s, l, rng)
		}
	}
}

// work carries each waiting record of l's stream one attempt on.
func work(ctx context.Context, s store.Store, l store.Lease, rng *rand.Rand) {
	recs, err := s.Pending(ctx, l, 0, 20)
	if lost(l, err) {
		return
	}
	if err != nil {
		fail("pending: %v", err)
	}
	for _, r := range recs {
		if r.Attempts >= 5 { // died of its budget in a run that was killed
			r.State, r.Reason = machine.Dead, machine.Exhausted
			if !save(ctx, s, l, store.UpdateOf(r)) {
				return
			}
			say("end %s %d %d %d", r.ID, r.State, r.Reason, r.Attempts)
			continue
		}
		r.Attempts++
		r.NextAt = time.Now().Add(50 * time.Millisecond)
		if !save(ctx, s, l, store.UpdateOf(r)) {
			return
		}
		say("try %s %d", r.ID, r.Attempts)
		u := store.UpdateOf(r)
		switch x := rng.IntN(10); {
		case x < 6:
			u.State, u.Outcome = machine.Delivered, &store.Outcome{Attempt: r.Attempts, Status: 204}
		case r.Attempts >= 3 && x < 8:
			u.State, u.Reason, u.Outcome = machine.Dead, machine.Rejected, &store.Outcome{Attempt: r.Attempts, Status: 400, Detail: "bad request"}
		default:
			u.State, u.Outcome = machine.Retry, &store.Outcome{Attempt: r.Attempts, Status: 503, Detail: "unavailable"}
		}
		if !save(ctx, s, l, u) {
			return
		}
		if u.State.Terminal() {
			say("end %s %d %d %d", r.ID, u.State, u.Reason, u.Attempts)
		}
	}
	if err := s.Release(ctx, l); err != nil && !lost(l, err) {
		fail("release: %v", err)
	}
}

// lost reports whether err says the child's lease on l has gone stale: on
// a loaded machine a 300ms lease can expire mid-work, and a correct owner
// then drops the stream, as the worker does, instead of failing.
func lost(l store.Lease, err error) bool {
	if !errors.Is(err, store.ErrStaleLease) {
		return false
	}
	say("lost %s %d", l.Stream, l.Token)
	return true
}

// save saves u under l; false if the lease went stale.
func save(ctx context.Context, s store.Store, l store.Lease, u store.Update) bool {
	err := s.Save(ctx, l, []store.Update{u})
	if lost(l, err) {
		return false
	}
	if err != nil {
		fail("save %s: %v", u.ID, err)
	}
	return true
}

// Loop runs the kill loop: cfg.Kills children, each killed at a seeded
// random moment, with the checks of the package doc after each.
func Loop(t *testing.T, cfg Config, open Open) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 11))
	w := newWitness()
	start := time.Now()
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = 160 * time.Millisecond
	}
	for run := 1; run <= cfg.Kills; run++ {
		delay := 10*time.Millisecond + time.Duration(rng.Int64N(int64(cfg.MaxDelay-10*time.Millisecond)))
		lines := runChild(t, cfg, run, delay)
		w.learn(t, lines)
		w.check(t, run, open)
		if t.Failed() {
			t.Fatalf("kill %d of %d (seed %d, killed %v after ready) broke a promise", run, cfg.Kills, cfg.Seed, delay)
		}
	}
	t.Logf("%d kills (seed %d) in %v: %d acknowledged enqueues present, %d record checks (attempts never fell), %d terminal records unchanged, %d dead leases refused",
		cfg.Kills, cfg.Seed, time.Since(start).Round(time.Millisecond), len(w.acked), w.attemptsChecked, len(w.terminal), w.leasesRefused)
}

// runChild starts child run, kills it delay after it is ready, and
// returns every complete line it printed.
func runChild(t *testing.T, cfg Config, run int, delay time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+cfg.Test+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), cfg.Env...), fmt.Sprintf("%s=%d", ChildEnv, run))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		once := sync.OnceFunc(func() { close(ready) })
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "KILL ") {
				continue
			}
			mu.Lock()
			lines = append(lines, strings.TrimPrefix(line, "KILL "))
			mu.Unlock()
			once()
		}
		once()
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("child %d never got ready", run)
	}
	time.Sleep(delay)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill child %d: %v", run, err)
	}
	<-done
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child %d ended with %v before the kill; its last lines: %v", run, err, tail(lines))
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "error ") {
			t.Fatalf("child %d: %s", run, l)
		}
	}
	return lines
}

func tail(lines []string) []string { return lines[max(0, len(lines)-5):] }
