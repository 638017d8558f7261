package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// statements is a pgx tracer (pgstore.Options.Tracer) that counts the
// round trips courier's store makes (a statement alone, or a batch of
// them) and sums, per statement or batch, the time from sending it to
// its answer: the round trip, the database's work and, for COMMIT, its
// fsync. It is on only with -profile.
type statements struct {
	mu    sync.Mutex
	stats map[string]*statementStat
}

type statementStat struct {
	count int64
	total time.Duration
}

type startKey struct{}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, startKey{}, queryStart{sql: statementKey(data.SQL), at: time.Now()})
}

type queryStart struct {
	sql string
	at  time.Time
}

func (s *statements) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	s.end(ctx)
}

// TraceBatchStart keys a batch (pgstore sends a transaction's BEGIN and
// writes with the query or COMMIT after them) by its statements' starts.
func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	var parts []string
	for _, q := range data.Batch.QueuedQueries {
		k := statementKey(q.SQL)
		parts = append(parts, k[:min(len(k), 24)])
	}
	return context.WithValue(ctx, startKey{}, queryStart{sql: "batch: " + strings.Join(parts, " + "), at: time.Now()})
}

func (*statements) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (s *statements) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	s.end(ctx)
}

// end adds the time since ctx's statement or batch went out to its key.
func (s *statements) end(ctx context.Context) {
	q, ok := ctx.Value(startKey{}).(queryStart)
	if !ok {
		return
	}
	d := time.Since(q.at)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stats == nil {
		s.stats = map[string]*statementStat{}
	}
	st := s.stats[q.sql]
	if st == nil {
		st = &statementStat{}
		s.stats[q.sql] = st
	}
	st.count++
	st.total += d
}

// statementKey shortens a statement to its first 70 characters, blanks
// folded, so that each statement of the store is one key.
func statementKey(sql string) string {
	k := strings.Join(strings.Fields(sql), " ")
	if len(k) > 70 {
		k = k[:70]
	}
	return k
}

// report writes, for a run of wall time that delivered n events, each
// statement's count and summed time per delivered event, the busiest
// first, and the process's CPU time over the run (cpu).
func (s *statements) report(w io.Writer, wall time.Duration, n int64, cpu time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.stats))
	var count int64
	var total time.Duration
	for k, st := range s.stats {
		keys = append(keys, k)
		count += st.count
		total += st.total
	}
	slices.SortFunc(keys, func(a, b string) int { return int(s.stats[b].total - s.stats[a].total) })
	per := func(x float64) float64 { return x / float64(max(n, 1)) }
	fmt.Fprintf(w, "profile: %d delivered in %v; %.2f round trips and %.2f ms of their time per delivered event (summed over connections); process CPU %.2f ms per delivered event\n",
		n, wall.Round(time.Millisecond), per(float64(count)), per(float64(total.Microseconds())/1000), per(float64(cpu.Microseconds())/1000))
	for _, k := range keys {
		st := s.stats[k]
		fmt.Fprintf(w, "  %6.2f/event %7.3f ms/event  mean %6.3f ms  %s\n",
			per(float64(st.count)), per(float64(st.total.Microseconds())/1000), float64(st.total.Microseconds())/1000/float64(st.count), k)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startCPUProfile starts Go's CPU profiler into path and returns the
// function that stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
