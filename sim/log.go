package sim

import (
	"sync"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/memstore"
)

// obsLog holds a run's observations, every stream's, in the order they
// were made, until the run ends and each stream's log is cut out of it.
// A stream's log cannot be sized in advance (lease renewals, faults and
// resends add entries at rates no world states), and growing one slice per
// stream copied each 264-byte entry several times and left half of the
// room unused. This buffer is internal to a run, so it is reused across
// runs (buffers); the logs the Result holds are one exact allocation.
type obsLog struct {
	entries []invariants.Entry
	streams []int32 // the stream of entries[i], when there are several
	counts  []int   // entries per stream so far: the next entry's Step
}

// buffers are the memory a run uses only while it runs, reused by later
// runs (bufferPool): the simulator itself, the observation log, the event
// queue's heap, the batch of observations a worker event makes, and the
// simulator's per-event state.
type buffers struct {
	sim        sim // newSim overwrites it whole
	log        obsLog
	acked      []bool // by event index
	recv       []recvEvent
	lastFlight []*flight // by event index
	flights    arena[flight]
	probes     arena[probing]
	ids        []string // EventID(i) at i, kept across runs (eventIDs)
	receiver   receiver // the fake receiver, its slices kept (receiver.reset)
	nodes      []node   // the run's nodes, which sim.nodes points to
	nodeRefs   []*node  // sim.nodes
	// By event index, as result counts them: sends, and the store's
	// final records.
	sends   []int
	final   []*machine.Record
	granted []uint64 // by stream (sim.granted)
	// store is the store of every run on these buffers, emptied when a
	// run ends (memstore.Store.Reset) rather than built anew: its clock
	// and failure injector read sim, which is the same for every run.
	store  *memstore.Store
	now    func() time.Time
	outage func() bool
}

// arena hands out values of a run that live until it ends (a send's
// flight, a probe), from chunks kept across runs: one allocation per
// arenaChunk values instead of one each. A value is never freed alone:
// the queue's happenings may point to it until the run ends, when the
// queue is emptied and the arena reset.
type arena[T any] struct {
	chunks [][]T
	n      int // values handed out this run
}

const arenaChunk = 64

// new returns a zero value that stays put until reset.
func (a *arena[T]) new() *T {
	c, i := a.n/arenaChunk, a.n%arenaChunk
	if c == len(a.chunks) {
		a.chunks = append(a.chunks, make([]T, arenaChunk))
	}
	a.n++
	return &a.chunks[c][i]
}

// reset zeroes the values handed out (dropping what they point to) for
// the next run.
func (a *arena[T]) reset() {
	for c := 0; c*arenaChunk < a.n; c++ {
		clear(a.chunks[c][:min(arenaChunk, a.n-c*arenaChunk)])
	}
	a.n = 0
}

// getBuffers returns empty buffers for a run with streams streams and
// events events whose log is expected to hold about entries entries.
func getBuffers(streams, events, entries int) *buffers {
	b, ok := bufferPool.get()
	if !ok {
		b = newBuffers()
	}
	b.acked = zeroed(b.acked, events)
	b.lastFlight = zeroed(b.lastFlight, events)
	b.recv = zeroed(b.recv, events)
	b.sends = zeroed(b.sends, events)
	b.final = zeroed(b.final, events)
	l := &b.log
	l.counts = append(l.counts[:0], make([]int, streams)...)
	if l.entries == nil { // handed to the last run (cut): a recycled one will do
		l.entries, _ = slabPool.get()
	}
	if cap(l.entries) < entries {
		l.entries = make([]invariants.Entry, 0, entries)
	}
	return b
}

// newBuffers returns new buffers, with their store.
func newBuffers() *buffers {
	b := &buffers{}
	s := &b.sim
	b.now = func() time.Time { return s.now }
	// s.cfg, not a copy of it: a closure holding a copy would move it to
	// the heap.
	b.outage = func() bool { return s.inWindows(s.cfg.StoreOutages) }
	b.store = memstore.New(b.now)
	b.store.SetUnavailable(b.outage)
	return b
}

// zeroed returns n zero values, in s if it has room.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// release empties b, the buffers of s, and keeps them for a later run,
// unless the log grew too large to keep. It must be the last use of s,
// which is b.sim: another run may take b at once.
func (b *buffers) release(s *sim) {
	l := &b.log
	clear(l.entries) // drop what the entries point to: payloads, strings
	l.entries, l.streams = l.entries[:0], l.streams[:0]
	clear(b.lastFlight) // pointers to flights, which are reset below
	clear(b.final)      // pointers to the result's records
	clear(b.nodes)      // the nodes' workers, stores and names
	clear(b.nodeRefs)
	// Whatever else the run points to (its nodes, its world, what its
	// store holds) is not kept alive in the pool.
	*s = sim{}
	b.store.Reset(b.now, b.outage)
	b.flights.reset()
	b.probes.reset()
	if cap(l.entries) <= poolMaxEntries {
		bufferPool.put(b)
	}
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

// poolMaxRecords is the largest buffer of Final records kept: a few
// standard runs' worth, so that a long run's do not stay for every later
// small one (it would clear them all at every Recycle).
const poolMaxRecords = 1 << 10

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
	bufferPool  pool[*buffers]
	slabPool    pool[[]invariants.Entry] // the logs of recycled results
	finalsPool  pool[[]machine.Record]   // the Final records of recycled results
	checkerPool pool[*invariants.Checker]
)

// next appends a zero entry at instant at to stream i's log, numbered,
// and returns it to be filled in place: an entry is some 264 bytes, and
// building one apart and then appending it zeroes and copies it twice.
func (l *obsLog) next(i int, at time.Time) *invariants.Entry {
	n := len(l.entries)
	if n == cap(l.entries) {
		l.reserve(1)
	}
	// Zeroed in place: an append of a zero Entry builds one and copies it.
	l.entries = l.entries[:n+1]
	e := &l.entries[n]
	*e = invariants.Entry{}
	e.At, e.Step = at, l.counts[i]
	l.counts[i]++
	l.of(i)
	return e
}

// of records that the entry just logged is stream i's, for cut, which
// needs it only to tell several streams' entries apart.
func (l *obsLog) of(i int) {
	if len(l.counts) > 1 {
		l.streams = append(l.streams, int32(i))
	}
}

// reserve makes room for n more entries without an append growing the
// buffer: it doubles it instead, as append grows a long slice by a
// quarter at a time, which copies a long run's log several times over.
func (l *obsLog) reserve(n int) {
	if len(l.entries)+n > cap(l.entries) {
		grown := make([]invariants.Entry, len(l.entries), 2*cap(l.entries)+n+64)
		copy(grown, l.entries)
		l.entries = grown
	}
}

// stamp logs the entries from index from on, appended to the buffer
// directly, in stream i's log at instant at, numbering them.
func (l *obsLog) stamp(i int, from int, at time.Time) {
	step := l.counts[i]
	for j := from; j < len(l.entries); j++ {
		e := &l.entries[j]
		e.At, e.Step = at, step
		step++
		l.of(i)
	}
	l.counts[i] = step
}

// cut hands each run its stream's entries, in order, all in one slab (a
// recycled result's if one is large enough); a lone stream gets the
// buffer itself, which a later run then takes from Recycle.
// Each run's slice is capped at its length, so appending to one cannot
// overwrite the next. It returns the slab.
func (l *obsLog) cut(runs []invariants.Run) []invariants.Entry {
	if len(runs) == 1 {
		// The buffer is the one stream's log as it is: hand it over.
		all, n := l.entries, len(l.entries)
		runs[0].Entries = all[:n:n]
		l.entries = nil
		return all
	}
	var all []invariants.Entry
	if slab, ok := slabPool.get(); ok && cap(slab) >= len(l.entries) {
		all = slab[:len(l.entries)] // every entry is overwritten below
	} else {
		// A quarter more than this run needs: a sweep's runs differ in
		// size, and a slab recycled a little too small for the next run
		// is dropped for a new one.
		n := len(l.entries)
		all = make([]invariants.Entry, n, n+n/4)
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
	return all
}

// Recycle lets later runs reuse the memory of r's observation logs. The
// caller must be done with r: r.Run, r.Runs and every entry in them are
// overwritten by a later run. Stats, Hash, Trace and Violations are not
// touched. A sweep, which keeps only each run's summary, recycles every
// run; anything that keeps a Result must not.
//
// The records and entries are not cleared: a later run overwrites each
// whole before it reads it (see recycledUnread). Until then a pooled
// buffer keeps alive what its last run's point to, payloads mostly: at
// most poolMax buffers' worth, where clearing every entry was some 1% of
// a short run.
func Recycle(r Result) {
	if r.finals != nil && cap(r.finals) <= poolMaxRecords {
		finalsPool.put(r.finals[:0])
	}
	if r.slab == nil || cap(r.slab) > poolMaxEntries {
		return
	}
	slabPool.put(r.slab[:0])
}
