// This file proves that pgstore keeps what it acknowledged across
// SIGKILL: a child process enqueues and saves through the real
// PostgreSQL and is killed at 50 seeded random moments; see package
// killtest for the checks.
package pgstore

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/internal/killtest"
)

const killSchemaEnv = "COURIER_KILLTEST_SCHEMA"

func killOpen(ctx context.Context) (store.Store, func(), error) {
	s, err := Open(ctx, os.Getenv(EnvVar), Options{Schema: os.Getenv(killSchemaEnv), MaxConns: 4})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

func TestKillLoop(t *testing.T) {
	if killtest.Child(killOpen) {
		return
	}
	conn := server(t)
	if testing.Short() {
		t.Skip("the kill loop takes tens of seconds; not in -short")
	}
	schema := freshSchema(t, conn)
	t.Setenv(killSchemaEnv, schema)
	killtest.Loop(t, killtest.Config{Kills: 50, Seed: 1, MaxDelay: 400 * time.Millisecond, Test: "TestKillLoop", Env: []string{killSchemaEnv + "=" + schema}}, killOpen)
}
