// This file proves that an owner sees a changed policy at its next lease
// renewal: Policy answering another config (not just another Seed)
// closes the stream as a pause does, with the reply still due
// persisted, and the next claim builds the machine with the new config,
// with no takeover by another worker.
package worker_test

import (
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

func TestChangedPolicyClosesTheStreamAtRenewal(t *testing.T) {
	changed := false
	seed := uint64(0)
	e := newEnv(t, func(c *worker.Config) {
		c.Policy = func(string) (machine.Config, error) {
			p := policy()
			seed++
			p.Seed = seed // a fresh seed at each call, as courier serve draws one
			if changed {
				p.AttemptTimeout = 7 * time.Second
			}
			return p, nil
		}
	})
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	e.clock.Advance(ttl / 3)
	e.advance()
	if e.count(worker.Faulted) != 0 || !e.w.Owns("s") {
		t.Fatalf("a renewal whose policy differs only by its seed closed the stream (faults %d)", e.count(worker.Faulted))
	}
	changed = true
	e.clock.Advance(ttl / 3)
	if fx := e.advance(); len(fx.Sends) != 0 {
		t.Fatalf("a renewal that found a changed policy started %+v", fx.Sends)
	}
	if !e.w.Owns("s") || e.count(worker.Faulted) != 1 {
		t.Fatalf("owns=%v faults=%d: the owner must keep the stream for the reply due, and report the change", e.w.Owns("s"), e.count(worker.Faulted))
	}
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends) != 0 || e.w.Owns("s") {
		t.Fatalf("after its last reply the owner started %+v and owns the stream: %v; want nothing, and the stream given back", fx.Sends, e.w.Owns("s"))
	}
	next := oneSend(t, e.nextSends(), "e2", 1)
	if next.Timeout != 7*time.Second {
		t.Errorf("the next claim's send has Timeout %v; want the new policy's 7s", next.Timeout)
	}
}
