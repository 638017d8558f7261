package courier_test

import (
	"sync"
	"testing"
	"time"
)

// runLimit bounds a test's wait for Run to return once its context has
// ended (ShutdownTimeout and StoreTimeout are 30s and 10s at most here),
// far below go test's 10-minute default: a hang fails the test that
// hung, saying what it waited for. Under synctest every limit is on the
// bubble's clock, so a loop that never ends, its timers firing for ever,
// fails in moments of real time.
const runLimit = 2 * time.Minute

// await receives from c, or fails t once limit has passed.
func await[T any](t *testing.T, what string, c <-chan T, limit time.Duration) T {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case v := <-c:
		return v
	case <-timer.C:
		t.Fatalf("%s: still waiting after %v", what, limit)
		panic("unreachable")
	}
}

// waitGroup waits for wg, or fails t once limit has passed.
func waitGroup(t *testing.T, what string, wg *sync.WaitGroup, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	await(t, what, done, limit)
}
