package e2e

import (
	"sync"
	"testing"
	"time"
)

// waitLimit bounds each wait of a test on other goroutines or a child
// process, far below go test's 10-minute default: a hang fails the test
// that hung, saying what it waited for.
const waitLimit = 3 * time.Minute

// waitGroup waits for wg, or fails t once waitLimit has passed.
func waitGroup(t *testing.T, what string, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatalf("%s: still waiting after %v", what, waitLimit)
	}
}
