// This file proves that a publish loses no delivery, and doubles none,
// across a crash in the fan-out window, on a real SQLite file shared by
// the delivery store and the platform: a child process publishes a
// message to three endpoints and is killed (SIGKILL) at a chosen point of
// the fan-out: before any enqueue, between two, or between an enqueue and
// its mark. The parent then reopens the file as a restarted courier does
// and re-drives: each endpoint's stream must then hold exactly one
// delivery, under its stable ID, with the payload; and the message is
// complete.
package platform_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platsqlite"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/webhook"
)

const (
	crashDBEnv    = "PLATFORM_CRASH_DB"
	crashAtEnv    = "PLATFORM_CRASH_AT"    // the enqueue call (from 1) at which the child stops
	crashAfterEnv = "PLATFORM_CRASH_AFTER" // "1": stop after that enqueue, before its mark
	crashLine     = "CRASH-POINT"
	crashPayload  = `{"order":42}`
)

type stores struct {
	ds *sqlitestore.Store
	ps *platsqlite.Store
}

func openStores(ctx context.Context, path string) (stores, error) {
	ds, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		return stores{}, err
	}
	ps, err := platsqlite.Open(ctx, path, platsqlite.Options{})
	if err != nil {
		ds.Close()
		return stores{}, err
	}
	return stores{ds: ds, ps: ps}, nil
}

func (s stores) close() { s.ps.Close(); s.ds.Close() }

func (s stores) service(enqueue platform.Enqueuer) (*platform.Service, error) {
	if enqueue == nil {
		enqueue = func(ctx context.Context, stream, id string, payload []byte) error {
			_, _, err := s.ds.Enqueue(ctx, stream, id, payload)
			return err
		}
	}
	return platform.New(platform.Config{Store: s.ps, Enqueue: enqueue, MaxPayloadBytes: 1024})
}

// crashChild publishes to the application the parent made, and stops at
// the crash point: it says so on stdout and waits to be killed.
func crashChild() error {
	ctx := context.Background()
	s, err := openStores(ctx, os.Getenv(crashDBEnv))
	if err != nil {
		return err
	}
	at, _ := strconv.Atoi(os.Getenv(crashAtEnv))
	after := os.Getenv(crashAfterEnv) == "1"
	calls := 0
	svc, err := s.service(func(ctx context.Context, stream, id string, payload []byte) error {
		if calls++; calls == at {
			if after {
				if _, _, err := s.ds.Enqueue(ctx, stream, id, payload); err != nil {
					return err
				}
			}
			fmt.Println(crashLine)
			select {} // killed here
		}
		_, _, err := s.ds.Enqueue(ctx, stream, id, payload)
		return err
	})
	if err != nil {
		return err
	}
	apps, err := s.ps.ListApps(ctx, "", 1)
	if err != nil || len(apps) != 1 {
		return fmt.Errorf("the parent's application: %v, %v", apps, err)
	}
	_, _, err = svc.Publish(ctx, apps[0].ID, "order.paid", "order-42", []byte(crashPayload))
	return fmt.Errorf("Publish returned (%v) instead of stopping at the crash point", err)
}

func TestCrashInFanoutWindow(t *testing.T) {
	if os.Getenv(crashDBEnv) != "" {
		if err := crashChild(); err != nil {
			fmt.Println("child:", err)
			os.Exit(2)
		}
		return
	}
	for _, c := range []struct {
		name  string
		at    int
		after bool
	}{
		{"before-any-enqueue", 1, false},
		{"between-enqueues", 2, false},
		{"enqueued-not-marked", 2, true},
		{"last-enqueued-not-marked", 3, true},
	} {
		t.Run(c.name, func(t *testing.T) { crashAndRecover(t, c.at, c.after) })
	}
}

func crashAndRecover(t *testing.T, at int, after bool) {
	path := filepath.Join(t.TempDir(), "courier.db")
	s, err := openStores(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	app, err := s.ps.CreateApp(t.Context(), platform.Application{ID: platform.NewID(platform.AppKind, time.Now()), Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for range 3 {
		e, err := s.ps.CreateEndpoint(t.Context(), platform.Endpoint{ID: platform.NewID(platform.EndpointKind, time.Now()), AppID: app.ID,
			URL: "https://example.com/", Secrets: []string{webhook.NewSecret()}, Enabled: true, Ordering: platform.Strict})
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, e.ID)
	}
	s.close()

	runChildToCrash(t, path, at, after)

	s, err = openStores(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	left, err := s.ps.Unfinished(t.Context(), "", 10)
	if err != nil || len(left) != 1 || len(left[0].Fanout) != 3 {
		t.Fatalf("after the crash: unfinished %+v, %v; want the one message with its 3 entries", left, err)
	}
	m := left[0]
	svc, err := s.service(nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := svc.Redrive(t.Context()); n != 1 || err != nil {
		t.Fatalf("Redrive = %d, %v; want 1, nil", n, err)
	}
	checkDelivered(t, s, app.ID, m.ID, eps, 2)
	again, created, err := svc.Publish(t.Context(), app.ID, "order.paid", "order-42", []byte(crashPayload))
	if err != nil || created || again.ID != m.ID {
		t.Errorf("the producer's retry after the crash = %s, created %v, %v; want %s, false, nil", again.ID, created, err, m.ID)
	}
	checkDelivered(t, s, app.ID, m.ID, eps, 3) // the first check's probes took seq 2
}

// runChildToCrash runs the child until it reports the crash point, then
// kills it with SIGKILL.
func runChildToCrash(t *testing.T, path string, at int, after bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashInFanoutWindow$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDBEnv+"="+path, crashAtEnv+"="+strconv.Itoa(at), crashAfterEnv+"="+map[bool]string{true: "1"}[after])
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	reached := false
	for lines.Scan() {
		if strings.TrimSpace(lines.Text()) == crashLine {
			reached = true
			break
		}
		t.Logf("child: %s", lines.Text())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !reached {
		t.Fatal("the child ended without reaching the crash point")
	}
}

// checkDelivered: message id of app is complete, and each endpoint's
// stream holds exactly its one delivery: a probe enqueued now takes seq
// next, the one after every event already there.
func checkDelivered(t *testing.T, s stores, app, id string, eps []string, next uint64) {
	t.Helper()
	m, err := s.ps.GetMessage(t.Context(), app, id)
	if err != nil || !m.Complete() {
		t.Fatalf("message %s: %+v, %v; want it complete", id, m.Fanout, err)
	}
	for _, ep := range eps {
		rec, err := s.ds.Get(t.Context(), platform.DeliveryID(id, ep))
		if err != nil {
			t.Errorf("delivery to %s: %v", ep, err)
			continue
		}
		if rec.Stream != platform.StreamOf(ep) || rec.Seq != 1 || string(rec.Payload) != crashPayload {
			t.Errorf("delivery to %s: stream %s seq %d payload %q; want its stream, seq 1 (no other event there), the payload",
				ep, rec.Stream, rec.Seq, rec.Payload)
		}
		probe, _, err := s.ds.Enqueue(t.Context(), platform.StreamOf(ep), "probe-"+ep+"-"+strconv.FormatInt(time.Now().UnixNano(), 36), []byte("p"))
		if err != nil || probe.Seq != next {
			t.Errorf("stream %s: a probe took seq %d, %v; want %d (no other delivery there)", ep, probe.Seq, err, next)
		}
	}
}
