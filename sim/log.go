package sim

import (
	"sync"

	"github.com/courierlab/courier/invariants"
)

// obsLog holds a run's observations, every stream's, in the order they
// were made, until the run ends and each stream's log is cut out of it.
// A stream's log cannot be sized in advance (lease renewals, faults and
// resends add entries at rates no world states), and growing one slice per
// stream copied each 264-byte entry several times and left half of the
// room unused. This buffer is internal to a run, so it is reused across
// runs (logPool); the logs the Result holds are one exact allocation.
type obsLog struct {
	entries []invariants.Entry
	streams []int32 // the stream of entries[i]
	counts  []int   // entries per stream so far: the next entry's Step
}

// pool keeps a few buffers for the next runs on any goroutine: a sweep's
// runs reuse them instead of growing new ones. A sync.Pool would not do:
// the collector empties it every other cycle, and a sweep collects every
// run or two. A pool is bounded in count, and its user bounds the size of
// what it keeps, so one huge run does not pin its buffers for good.
type pool[T any] struct {
	mu   sync.Mutex
	free []T
}

// poolMax is how many buffers a pool keeps: a few per core.
const poolMax = 16

// poolMaxEntries is the largest buffer of entries kept, in entries (17 MB).
const poolMaxEntries = 1 << 16

func (p *pool[T]) get() (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var x T
	n := len(p.free)
	if n == 0 {
		return x, false
	}
	x = p.free[n-1]
	p.free = p.free[:n-1]
	return x, true
}

func (p *pool[T]) put(x T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < poolMax {
		p.free = append(p.free, x)
	}
}

var (
	logPool     pool[*obsLog]
	slabPool    pool[[]invariants.Entry] // the logs of recycled results
	checkerPool pool[*invariants.Checker]
)

func newObsLog(streams int) *obsLog {
	l, ok := logPool.get()
	if !ok {
		l = &obsLog{}
	}
	l.counts = append(l.counts[:0], make([]int, streams)...)
	return l
}

// release empties l and keeps it for a later run, unless it grew too
// large to keep.
func (l *obsLog) release() {
	clear(l.entries) // drop what the entries point to: payloads, strings
	l.entries, l.streams = l.entries[:0], l.streams[:0]
	if cap(l.entries) <= poolMaxEntries {
		logPool.put(l)
	}
}

// add logs e in stream i's log, numbering it.
func (l *obsLog) add(i int, e *invariants.Entry) {
	e.Step = l.counts[i]
	l.counts[i]++
	l.entries = append(l.entries, *e)
	l.streams = append(l.streams, int32(i))
}

// cut hands each run its stream's entries, in order, all in one slab (a
// recycled result's if one is large enough), then releases the buffer.
// Each run's slice is capped at its length, so appending to one cannot
// overwrite the next. It returns the slab.
func (l *obsLog) cut(runs []invariants.Run) []invariants.Entry {
	var all []invariants.Entry
	if slab, ok := slabPool.get(); ok && cap(slab) >= len(l.entries) {
		all = slab[:len(l.entries)] // every entry is overwritten below
	} else {
		all = make([]invariants.Entry, len(l.entries))
	}
	next := make([]int, len(runs)) // where stream i's next entry goes
	at := 0
	for i := range runs {
		next[i] = at
		runs[i].Entries = all[at : at+l.counts[i] : at+l.counts[i]]
		at += l.counts[i]
	}
	for j := range l.entries {
		i := l.streams[j]
		all[next[i]] = l.entries[j]
		next[i]++
	}
	l.release()
	return all
}

// Recycle lets later runs reuse the memory of r's observation logs. The
// caller must be done with r: r.Run, r.Runs and every entry in them are
// overwritten by a later run. Stats, Hash, Trace and Violations are not
// touched. A sweep, which keeps only each run's summary, recycles every
// run; anything that keeps a Result must not.
func Recycle(r Result) {
	if r.slab == nil || cap(r.slab) > poolMaxEntries {
		return
	}
	clear(r.slab) // drop what the entries point to until they are reused
	slabPool.put(r.slab[:0])
}
