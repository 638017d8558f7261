package main

import (
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// testLimit bounds each wait of a test on another goroutine or a child
// process, far below go test's 10-minute default: a hang fails the test
// that hung, saying what it waited for.
const testLimit = 3 * time.Minute

// client is the tests' HTTP client: no call waits longer than its
// Timeout, where http.DefaultClient would wait for ever.
var client = &http.Client{Timeout: 30 * time.Second}

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

// until polls cond every 5ms until it holds, or fails t once limit has
// passed.
func until(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", limit, what)
		}
	}
}

// exitOf waits for cmd to exit and returns what Wait returned; after
// limit it kills the process and fails t.
func exitOf(t *testing.T, what string, cmd *exec.Cmd, limit time.Duration) error {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-exited:
		return err
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%s: still running after %v; killed", what, limit)
		panic("unreachable")
	}
}
