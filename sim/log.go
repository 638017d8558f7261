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

// logPool keeps a few run buffers for the next runs on any goroutine: a
// sweep's runs reuse them instead of growing new ones. A sync.Pool would
// not do: the collector empties it every other cycle, and a sweep
// collects every run or two. The pool is bounded in count and in the size
// of what it keeps, so one huge run does not pin its buffer for good.
var logPool struct {
	sync.Mutex
	free []*obsLog
}

const (
	logPoolMax        = 16      // buffers kept
	logPoolMaxEntries = 1 << 16 // the largest buffer kept, in entries (17 MB)
)

func newObsLog(streams int) *obsLog {
	logPool.Lock()
	var l *obsLog
	if n := len(logPool.free); n > 0 {
		l = logPool.free[n-1]
		logPool.free = logPool.free[:n-1]
	}
	logPool.Unlock()
	if l == nil {
		l = &obsLog{}
	}
	l.counts = append(l.counts[:0], make([]int, streams)...)
	return l
}

// release empties l and keeps it for a later run, unless the pool is full
// or l grew too large to keep.
func (l *obsLog) release() {
	clear(l.entries) // drop what the entries point to: payloads, strings
	l.entries, l.streams = l.entries[:0], l.streams[:0]
	if cap(l.entries) > logPoolMaxEntries {
		return
	}
	logPool.Lock()
	if len(logPool.free) < logPoolMax {
		logPool.free = append(logPool.free, l)
	}
	logPool.Unlock()
}

// add logs e in stream i's log, numbering it.
func (l *obsLog) add(i int, e *invariants.Entry) {
	e.Step = l.counts[i]
	l.counts[i]++
	l.entries = append(l.entries, *e)
	l.streams = append(l.streams, int32(i))
}

// cut hands each run its stream's entries, in order, all in one
// allocation, then releases the buffer. Each run's slice is
// capped at its length, so appending to one cannot overwrite the next.
func (l *obsLog) cut(runs []invariants.Run) {
	all := make([]invariants.Entry, len(l.entries))
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
}
