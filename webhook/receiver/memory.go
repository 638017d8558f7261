package receiver

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/courierlab/courier/internal/plant"
)

// Memory is a Store in process memory: fast, and forgotten on restart (so
// a duplicate arriving after a restart is applied again). Use SQL when
// the application's effects are durable.
type Memory struct {
	mu      sync.Mutex
	applied map[string]time.Time     // id → when applied
	order   []appliedAt              // applied ids, oldest first, for pruning
	busy    map[string]chan struct{} // id → closed when its claim ends
	streams map[string]*memStream
}

type appliedAt struct {
	id string
	at time.Time
}

type memStream struct {
	last uint64
	busy chan struct{} // non-nil while a claim on the stream is held
}

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{applied: map[string]time.Time{}, busy: map[string]chan struct{}{}, streams: map[string]*memStream{}}
}

// Begin implements Store.
func (m *Memory) Begin(ctx context.Context, k Key, now time.Time, window time.Duration) (Claim, Verdict, error) {
	for {
		wait, claim, verdict := m.try(k, now, window)
		if wait == nil {
			return claim, verdict, nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// try decides under the lock, or returns a channel to wait on.
func (m *Memory) try(k Key, now time.Time, window time.Duration) (<-chan struct{}, Claim, Verdict) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prune(now.Add(-window))
	if at, ok := m.applied[k.ID]; ok && !at.Before(now.Add(-window)) && !plant.On(plant.KitNoDedup) {
		return nil, nil, Duplicate
	}
	if ch := m.busy[k.ID]; ch != nil {
		return ch, nil, 0
	}
	var st *memStream
	if k.Strict {
		st = m.streams[k.Stream]
		if st == nil {
			st = &memStream{}
			m.streams[k.Stream] = st
		}
		if st.busy != nil {
			return st.busy, nil, 0
		}
		if k.Seq <= st.last {
			return nil, nil, Superseded
		}
		st.busy = make(chan struct{})
	}
	m.busy[k.ID] = make(chan struct{})
	return nil, &memClaim{m: m, k: k, at: now, st: st}, Apply
}

// prune forgets ids applied before cutoff.
func (m *Memory) prune(cutoff time.Time) {
	n := 0
	for n < len(m.order) && m.order[n].at.Before(cutoff) {
		e := m.order[n]
		if at, ok := m.applied[e.id]; ok && at.Equal(e.at) {
			delete(m.applied, e.id)
		}
		n++
	}
	if n > 0 {
		m.order = append(m.order[:0], m.order[n:]...)
	}
}

// Len reports how many applied IDs are remembered.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.applied)
}

type memClaim struct {
	m    *Memory
	k    Key
	at   time.Time
	st   *memStream
	done bool
}

func (c *memClaim) Tx() *sql.Tx { return nil }

func (c *memClaim) Commit(context.Context) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.done {
		return nil
	}
	c.m.applied[c.k.ID] = c.at
	c.m.order = append(c.m.order, appliedAt{c.k.ID, c.at})
	if c.st != nil && c.k.Seq > c.st.last {
		c.st.last = c.k.Seq
	}
	c.release()
	return nil
}

func (c *memClaim) Abort() {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if !c.done {
		c.release()
	}
}

// release wakes the waiters; the caller holds the lock.
func (c *memClaim) release() {
	c.done = true
	close(c.m.busy[c.k.ID])
	delete(c.m.busy, c.k.ID)
	if c.st != nil {
		close(c.st.busy)
		c.st.busy = nil
	}
}
