// owner-wait reports a grant that ended a wait for an owner longer than
// Run.OwnerWait plus Slack, counted from the later of the due work and
// the end of the last lease (its release, or its expiry as last renewed);
// a parked stream's due work comes at the instant its release held it
// until.
package invariants_test

import (
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// due persists a new pending event due now.
func (b *logb) due(id string) int {
	b.seq++
	at := epoch.Add(b.now)
	return b.store(machine.Record{ID: id, Seq: b.seq, AcceptedAt: at, NextAt: at, State: machine.Pending})
}

// lease logs a grant to w of token, for ttl.
func (b *logb) lease(w string, token uint64, ttl time.Duration) int {
	return b.add(invariants.Entry{Kind: invariants.LeaseGranted, Worker: w, Token: token, Until: epoch.Add(b.now + ttl)})
}

func (b *logb) releaseLease(w string, token uint64) int {
	return b.add(invariants.Entry{Kind: invariants.LeaseReleased, Worker: w, Token: token})
}

// park leases the stream to w (token 1, for 3 s), lets it park its one
// event, and leaves the clock at 2 s.
func (b *logb) park(w string) {
	b.due("e1")
	b.lease(w, 1, 3*time.Second)
	b.wait(2 * time.Second)
	r := b.recs["e1"]
	r.State, r.Attempts = machine.Parked, 1
	b.store(r)
}

func TestOwnerWait(t *testing.T) {
	const bound = 5 * time.Second
	checkRows(t, []checkRow{
		{
			name:   "released and granted again within the bound",
			reason: "4 s without an owner against 5 s",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.due("e1")
				b.lease("w1", 1, 10*time.Second)
				b.wait(2 * time.Second)
				b.releaseLease("w1", 1)
				b.wait(4 * time.Second)
				b.lease("w2", 2, 10*time.Second)
				b.stop()
				return nil
			},
		},
		{
			name:   "released and granted again past the bound",
			reason: "6 s without an owner against 5 s, counted from the release",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.due("e1")
				b.lease("w1", 1, 10*time.Second)
				b.wait(2 * time.Second)
				b.releaseLease("w1", 1)
				b.wait(6 * time.Second)
				step := b.lease("w2", 2, 10*time.Second)
				b.stop()
				return []found{{invariants.OwnerWait, "", step}}
			},
		},
		{
			name:   "slack widens the bound",
			reason: "6 s against 5 s plus 2 s of slack",
			build: func(b *logb) []found {
				b.run.OwnerWait, b.run.Slack = bound, 2*time.Second
				b.due("e1")
				b.wait(6 * time.Second)
				b.lease("w1", 1, 10*time.Second)
				b.stop()
				return nil
			},
		},
		{
			name:   "counted from the expiry as last renewed",
			reason: "the lease stood until 6 s by its renewal, so 9 s is a 3 s wait; without the renewal it would be 6 s",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.due("e1")
				b.lease("w1", 1, 3*time.Second)
				b.wait(time.Second)
				b.add(invariants.Entry{Kind: invariants.LeaseRenewed, Worker: "w1", Token: 1, Until: epoch.Add(6 * time.Second)})
				b.wait(8 * time.Second)
				b.lease("w2", 2, 10*time.Second)
				b.stop()
				return nil
			},
		},
		{
			name:   "lease ran out, then a long wait",
			reason: "the lease ended at 3 s; granted again at 9 s",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.due("e1")
				b.lease("w1", 1, 3*time.Second)
				b.wait(9 * time.Second)
				step := b.lease("w2", 2, 10*time.Second)
				b.stop()
				return []found{{invariants.OwnerWait, "", step}}
			},
		},
		{
			name:   "no due work: no wait",
			reason: "the event is in retry until 8 s, granted at 9 s: 1 s of wait",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.due("e1")
				b.lease("w1", 1, 3*time.Second)
				r := b.recs["e1"]
				r.State, r.Attempts, r.NextAt = machine.Retry, 1, epoch.Add(8*time.Second)
				b.store(r)
				b.releaseLease("w1", 1)
				b.wait(9 * time.Second)
				b.lease("w2", 2, 10*time.Second)
				b.stop()
				return nil
			},
		},
		{
			name:   "a parked stream released until its probe, granted then",
			reason: "held until 30 s, granted at 34 s: 4 s against 5 s, though 32 s passed since the release",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.park("w1")
				b.add(invariants.Entry{Kind: invariants.LeaseReleased, Worker: "w1", Token: 1, Until: epoch.Add(30 * time.Second)})
				b.wait(32 * time.Second)
				b.lease("w2", 2, 10*time.Second)
				b.stop()
				return nil
			},
		},
		{
			name:   "a parked stream released until its probe, granted late",
			reason: "held until 30 s, granted at 36 s: 6 s against 5 s",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.park("w1")
				b.add(invariants.Entry{Kind: invariants.LeaseReleased, Worker: "w1", Token: 1, Until: epoch.Add(30 * time.Second)})
				b.wait(34 * time.Second)
				step := b.lease("w2", 2, 10*time.Second)
				b.stop()
				return []found{{invariants.OwnerWait, "", step}}
			},
		},
		{
			name:   "a parked stream released at once is due at once",
			reason: "a plain release holds it until the release itself (2 s): granted at 32 s is a 30 s wait",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.park("w1")
				b.releaseLease("w1", 1)
				b.wait(30 * time.Second)
				step := b.lease("w2", 2, 10*time.Second)
				b.stop()
				return []found{{invariants.OwnerWait, "", step}}
			},
		},
		{
			name:   "a parked stream whose next lease ran out is due from its expiry",
			reason: "released until 30 s, granted at 31 s and that lease ran out at 34 s: the next grant, at 38 s, waited 4 s",
			build: func(b *logb) []found {
				b.run.OwnerWait = bound
				b.park("w1")
				b.add(invariants.Entry{Kind: invariants.LeaseReleased, Worker: "w1", Token: 1, Until: epoch.Add(30 * time.Second)})
				b.wait(29 * time.Second)
				b.lease("w2", 2, 3*time.Second)
				b.wait(7 * time.Second)
				b.lease("w3", 3, 10*time.Second)
				b.stop()
				return nil
			},
		},
	})
}
