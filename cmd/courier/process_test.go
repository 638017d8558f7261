// This file proves courier serve as a user runs it: the binary is built,
// started as a process on a free port, fed over HTTP and delivering to a
// receiver built with the kit; it is killed with SIGKILL while events
// flow and started again (on SQLite), or one of two processes sharing a
// PostgreSQL database is killed; afterwards every acknowledged event has
// been applied exactly once: nothing lost, nothing applied twice. Both
// runs are also judged by invariants.Check over the processes' recorded
// logs (serve -record) merged with the receiver's.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/pgstore"
	"github.com/courierlab/courier/store/sqlitestore"
)

// buildBinary builds courier into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "courier")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is one running courier serve.
type proc struct {
	cmd  *exec.Cmd
	base string
	log  string
}

// startProc starts the binary and waits for it to log its address.
func startProc(t *testing.T, bin, cfg string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "serve.log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "-config", cfg, "-listen", "127.0.0.1:0"}, args...)...)
	cmd.Stderr, cmd.Stdout = lf, lf
	cmd.Env = append(os.Environ(), "COURIER_API_TOKENS=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	p := &proc{cmd: cmd, log: logPath}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("log of pid %d:\n%s", cmd.Process.Pid, tail(string(b), 40))
		}
	})
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		f, _ := os.Open(logPath)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "courier serving" {
				f.Close()
				p.base = "http://" + line.Addr
				return p
			}
		}
		f.Close()
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("courier did not start:\n%s", b)
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// publish sends one event; it reports whether courier acknowledged it
// (201 or 200). A refused connection or a 5xx is not an acknowledgement:
// the producer publishes the same ID again.
func publish(base, id string) (bool, error) {
	req, _ := http.NewRequest("POST", base+"/v1/streams/orders/events",
		strings.NewReader(fmt.Sprintf(`{"id":%q,"payload":{"n":%q}}`, id, id)))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return false, nil
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case 200, 201:
		return true, nil
	case 503:
		return false, nil
	}
	return false, fmt.Errorf("publish %s: status %d", id, resp.StatusCode)
}

// writeConfig writes a serve config delivering stream orders to sinkURL.
func writeConfig(t *testing.T, sinkURL, extra string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "courier.toml")
	text := `api_tokens = ["` + token + `"]
allow_loopback = true
poll = "100ms"
lease_ttl = "2s"
shutdown_timeout = "2s"
` + extra + `
[streams.orders]
url = "` + sinkURL + `/orders"
secrets = ["` + secret + `"]
ordering = "independent"
window = 4
base_backoff = "50ms"
max_backoff = "200ms"
attempt_timeout = "2s"
max_attempts = 50
`
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// baseSet is the courier serve processes a producer may call, by base
// URL, changed as processes are killed and restarted.
type baseSet struct {
	mu   sync.Mutex
	list []string
}

func (b *baseSet) set(bases ...string) {
	b.mu.Lock()
	b.list = bases
	b.mu.Unlock()
}

// retry calls send for the n-th item of a producer, through a different
// process on each try, until it reports the item acknowledged, waiting
// 20ms between tries. It reports false if ctx ended or send failed (the
// error is the test's).
func (b *baseSet) retry(ctx context.Context, t *testing.T, n int, send func(base string) (bool, error)) bool {
	for try := 0; ; try++ {
		if ctx.Err() != nil {
			return false
		}
		b.mu.Lock()
		base := b.list[(n+try)%len(b.list)]
		b.mu.Unlock()
		done, err := send(base)
		if err != nil {
			t.Error(err)
			return false
		}
		if done {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// producer publishes ids in order through whichever process answers,
// retrying an ID until it is acknowledged.
type producer struct {
	bases baseSet
	mu    sync.Mutex
	acked []string
}

func (p *producer) run(ctx context.Context, t *testing.T, ids []string) {
	for i, id := range ids {
		ok := p.bases.retry(ctx, t, i, func(base string) (bool, error) { return publish(base, id) })
		if !ok {
			return
		}
		p.mu.Lock()
		p.acked = append(p.acked, id)
		p.mu.Unlock()
	}
}

func (p *producer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// checkOnce waits until every acknowledged ID was applied and then
// asserts each was applied exactly once.
func checkOnce(t *testing.T, s *sink, acked []string, requests func() int) {
	t.Helper()
	eventually := func() bool {
		for _, id := range acked {
			if s.count(id) == 0 {
				return false
			}
		}
		return true
	}
	end := time.Now().Add(60 * time.Second)
	for !eventually() && time.Now().Before(end) {
		time.Sleep(50 * time.Millisecond)
	}
	lost, twice := 0, 0
	for _, id := range acked {
		switch n := s.count(id); {
		case n == 0:
			lost++
		case n > 1:
			twice++
		}
	}
	t.Logf("acknowledged %d, applied %d, requests %d (duplicates absorbed by the kit: %d), lost %d, applied twice %d",
		len(acked), len(acked)-lost, requests(), requests()-(len(acked)-lost), lost, twice)
	if lost != 0 || twice != 0 {
		t.Fatalf("lost %d, applied twice %d; want 0 and 0", lost, twice)
	}
}

// slowSink is a kit sink whose application takes a few milliseconds, so
// that attempts are in flight when a process is killed, and which counts
// every request that reached the kit.
func slowSink(t *testing.T) (*sink, func() int) {
	var mu sync.Mutex
	n := 0
	s := newSinkWrapped(t, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				mu.Lock()
				n++
				mu.Unlock()
				time.Sleep(3 * time.Millisecond)
			}
			inner.ServeHTTP(w, r)
		})
	})
	return s, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("evt-%04d", i)
	}
	return out
}

func TestProcessSIGKILLMidFlowLosesNothingAppliesNothingTwice(t *testing.T) {
	bin := buildBinary(t)
	s, requests := slowSink(t)
	s.rec = &recorder{}
	dbPath := filepath.Join(t.TempDir(), "courier.db")
	cfg := writeConfig(t, s.srv.URL, `database = "`+dbPath+`"`)
	logs := filepath.Join(t.TempDir(), "observed.jsonl")
	p1 := startProc(t, bin, cfg, "-record", logs)
	prod := &producer{}
	prod.bases.set(p1.base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	all := ids(300)
	done := make(chan struct{})
	go func() { defer close(done); prod.run(ctx, t, all) }()

	until(t, "120 events acknowledged", testLimit, func() bool { return prod.ackedCount() >= 120 })
	p1.kill(t) // mid-flow: publishes and deliveries in progress
	t.Logf("SIGKILL after %d acknowledged", prod.ackedCount())
	catchUp(t, logs, []string{logs}, sqliteAt(dbPath), all)
	healed := time.Now()
	p2 := startProc(t, bin, cfg, "-record", logs)
	prod.bases.set(p2.base)
	await(t, "the producer", done, testLimit)
	checkOnce(t, s, prod.acked, requests)
	// Applied is not settled: an event the killed process delivered, but
	// whose outcome it never saved, is sent again (and absorbed by the
	// kit) before the store says delivered. Wait for that before stopping.
	waitSettled(t, p2.base, prod.acked)

	// The restarted process shuts down gracefully on SIGTERM and exits 0.
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := exitOf(t, "the process after SIGTERM", p2.cmd, testLimit); err != nil {
		t.Errorf("after SIGTERM: %v; want exit 0", err)
	}
	judge(t, cfg, []string{logs}, sqliteAt(dbPath), s.rec, all, healed)
}

// waitSettled polls the API until every id is delivered or dead.
func waitSettled(t *testing.T, base string, ids []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		for {
			req, _ := http.NewRequest("GET", base+"/v1/events/"+id, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			var ev struct {
				State string `json:"state"`
			}
			if resp, err := client.Do(req); err == nil {
				json.NewDecoder(resp.Body).Decode(&ev)
				resp.Body.Close()
			}
			if ev.State == "delivered" || ev.State == "dead" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is still %q a minute after every event was applied", id, ev.State)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// opener opens, for reading, the store a test's processes share.
type opener func(t *testing.T) (st store.Store, close func())

func sqliteAt(path string) opener {
	return func(t *testing.T) (store.Store, func()) {
		st, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st, func() { st.Close() }
	}
}

func postgresAt(dsn, schema string) opener {
	return func(t *testing.T) (store.Store, func()) {
		st, err := pgstore.Open(context.Background(), dsn, pgstore.Options{Schema: schema, MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		return st, st.Close
	}
}

// readLog reads a -record log; a line that does not parse (the one a
// SIGKILL cut short) is passed over.
func readLog(t *testing.T, path string) []invariants.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []invariants.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e invariants.Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// catchUp appends to the killed process's log what its store holds beyond
// every log. A SIGKILL can fall between a durable write and the log line
// that reports it; without this the checker would judge the next owner's
// rebuild against a store state older than the one it read. Call it after
// the kill and before another process can take the killed one's streams
// (before the restart; or, with a survivor, with the survivor stopped and
// within the killed process's lease), so the entries fall between the two.
func catchUp(t *testing.T, killedLog string, logs []string, open opener, ids []string) {
	t.Helper()
	// The last state logged of each record: the last line within a log,
	// the latest of those across logs.
	last := map[string]invariants.Entry{}
	for _, path := range logs {
		mine := map[string]invariants.Entry{}
		for _, e := range readLog(t, path) {
			if e.Kind == invariants.Persisted {
				mine[e.ID] = e
			}
		}
		for id, e := range mine {
			if prev, ok := last[id]; !ok || e.At.After(prev.At) {
				last[id] = e
			}
		}
	}
	st, closeStore := open(t)
	defer closeStore()
	data, err := os.ReadFile(killedLog)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(killedLog, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(data) > 0 && data[len(data)-1] != '\n' {
		f.WriteString("\n") // end the line the SIGKILL cut short
	}
	caught := 0
	for _, id := range ids {
		r, err := st.Get(context.Background(), id)
		if err != nil {
			continue // never stored: the producer was not acknowledged
		}
		m := r.Machine()
		if e, ok := last[id]; ok && e.Record.State == m.State && e.Record.Attempts == m.Attempts &&
			e.Record.Reason == m.Reason && e.Record.NextAt.Equal(m.NextAt) {
			continue
		}
		b, _ := json.Marshal(invariants.Entry{At: time.Now(), Kind: invariants.Persisted, Worker: "store", ID: m.ID, Seq: m.Seq, Record: m})
		f.Write(append(b, '\n'))
		caught++
	}
	t.Logf("after the kill, %d durable writes were ahead of the logs and were read back from the store", caught)
}

// merge interleaves two logs by time, keeping each log's own order: a
// log's order is the order its writer observed (a worker stamps a send
// with the clock reading its machine used, which may be earlier than the
// stamp of the persist logged before it).
func merge(a, b []invariants.Entry) []invariants.Entry {
	out := make([]invariants.Entry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].At.Before(a[0].At) {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// judge merges the processes' observation logs with the receiver's,
// reads the store's final content, and runs invariants.Check.
func judge(t *testing.T, cfgPath string, logs []string, open opener, recv *recorder, ids []string, healed time.Time) {
	t.Helper()
	c, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var entries []invariants.Entry
	for _, path := range logs {
		entries = merge(entries, readLog(t, path))
	}
	recv.mu.Lock()
	entries = merge(entries, recv.run.Entries)
	recv.mu.Unlock()
	st, closeStore := open(t)
	defer closeStore()
	pol := c.Streams["orders"].Policy()
	slack := c.LeaseTTL.Duration + 2*c.Poll.Duration + 5*time.Second // the killed owner's lease, polls, a loaded machine
	run := invariants.Run{Policy: pol, Finished: true, HealedAt: healed, Slack: slack, Skew: 10 * time.Millisecond,
		LivenessBound: invariants.LivenessBound(pol, len(ids), 0, 50*time.Millisecond) + slack}
	leaseRules(&run, c)
	for _, e := range entries {
		run.Add(e)
	}
	for _, id := range ids {
		r, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("final state of %s: %v", id, err)
		}
		run.Final = append(run.Final, r.Machine())
	}
	vs := invariants.Check(run)
	for _, v := range vs[:min(len(vs), 20)] {
		t.Errorf("invariants.Check: %s", v)
	}
	t.Logf("invariants.Check judged %d observations (%d -record logs and the receiver): %d violations", len(run.Entries), len(logs), len(vs))
}

func TestProcessTwoServersOnPostgresOneKilled(t *testing.T) {
	dsn := os.Getenv("COURIER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("COURIER_TEST_POSTGRES is unset: set it to a PostgreSQL DSN to run two courier serve processes on one database")
	}
	bin := buildBinary(t)
	schema := fmt.Sprintf("svc_test_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dropSchema(t, dsn, schema) })
	s, requests := slowSink(t)
	s.rec = &recorder{}
	cfg := writeConfig(t, s.srv.URL, `postgres = "`+dsn+`"
postgres_schema = "`+schema+`"`)
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	a := startProc(t, bin, cfg, "-record", logA)
	b := startProc(t, bin, cfg, "-record", logB)
	prod := &producer{}
	prod.bases.set(a.base, b.base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	all := ids(300)
	done := make(chan struct{})
	go func() { defer close(done); prod.run(ctx, t, all) }()
	until(t, "120 events acknowledged", testLimit, func() bool { return prod.ackedCount() >= 120 })
	a.kill(t)
	healed := time.Now()
	t.Logf("SIGKILL of one process after %d acknowledged", prod.ackedCount())
	// The survivor is stopped while the killed process's unlogged writes
	// are read back, so that none of its own lands in between; it cannot
	// have taken the killed one's lease yet (lease_ttl is 2s).
	signalProc(t, b, syscall.SIGSTOP)
	catchUp(t, logA, []string{logA, logB}, postgresAt(dsn, schema), all)
	signalProc(t, b, syscall.SIGCONT)
	prod.bases.set(b.base)
	await(t, "the producer", done, testLimit)
	checkOnce(t, s, prod.acked, requests)
	waitSettled(t, b.base, prod.acked)
	signalProc(t, b, syscall.SIGTERM)
	if err := exitOf(t, "the process after SIGTERM", b.cmd, testLimit); err != nil {
		t.Errorf("after SIGTERM: %v; want exit 0", err)
	}
	judge(t, cfg, []string{logA, logB}, postgresAt(dsn, schema), s.rec, all, healed)
}

func signalProc(t *testing.T, p *proc, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v to pid %d: %v", sig, p.cmd.Process.Pid, err)
	}
}

// A SIGTERM waits for the attempts in flight (up to shutdown_timeout); a
// second signal exits at once, with code 130.
func TestProcessSecondSignalExitsAtOnce(t *testing.T) {
	bin := buildBinary(t)
	hang := make(chan struct{})
	var once sync.Once
	stuck := make(chan struct{})
	s := newSinkWrapped(t, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				once.Do(func() { close(stuck) })
				<-hang // the attempt stays in flight
			}
			inner.ServeHTTP(w, r)
		})
	})
	defer close(hang)
	cfg := writeConfig(t, s.srv.URL, `database = "`+filepath.Join(t.TempDir(), "courier.db")+`"`)
	cfg2 := strings.Replace(mustRead(t, cfg), `shutdown_timeout = "2s"`, `shutdown_timeout = "1m"`, 1)
	if err := os.WriteFile(cfg, []byte(cfg2), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, bin, cfg)
	if ok, err := publish(p.base, "held"); !ok || err != nil {
		t.Fatalf("publish: %v %v", ok, err)
	}
	await(t, "the attempt at the sink", stuck, testLimit)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("exited on the first SIGTERM with an attempt in flight (%v); want it to wait", err)
	case <-time.After(500 * time.Millisecond):
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("after the second SIGTERM: %v; want exit code 130", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5s after the second SIGTERM")
	}
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
