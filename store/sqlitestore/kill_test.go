// This file proves that sqlitestore keeps what it acknowledged across
// SIGKILL: a child process enqueues and saves through a real file and is
// killed at 50 seeded random moments; see package killtest for the checks.
package sqlitestore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/internal/killtest"
)

const killPathEnv = "COURIER_KILLTEST_SQLITE"

func killOpen(ctx context.Context) (store.Store, func(), error) {
	s, err := Open(ctx, os.Getenv(killPathEnv), Options{})
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}

func TestKillLoop(t *testing.T) {
	if killtest.Child(killOpen) {
		return
	}
	if testing.Short() {
		t.Skip("the kill loop takes tens of seconds; not in -short")
	}
	path := filepath.Join(t.TempDir(), "courier.db")
	t.Setenv(killPathEnv, path)
	killtest.Loop(t, killtest.Config{Kills: 50, Seed: 1, Test: "TestKillLoop", Env: []string{killPathEnv + "=" + path}}, killOpen)
}
