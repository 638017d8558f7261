package sim

import (
	"slices"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
)

// The planted runtime bugs of the policy catalogue: a runtime that hands
// the machine the wrong config, persists less than its batch, or loads
// records wrongly. With no bug active each function returns its input.

// machineConfig is the config the runtime hands the machine: the world's
// policy, which the checker judges against.
func (s *sim) machineConfig() machine.Config {
	p := s.w.Policy
	switch {
	case plant.On(plant.BackoffTooShort):
		p.BaseBackoff, p.MaxBackoff = max(p.BaseBackoff/4, 1), max(p.MaxBackoff/4, 1)
	case plant.On(plant.BreakerNeverTrips):
		p.BreakerThreshold = 1 << 30
	case plant.On(plant.AgeOverrun):
		p.MaxAge *= 2
	}
	return p
}

// stepMachine feeds in to w's machine, as the runtime does. Under
// RefuseKnownWhenFull the runtime checks the queue's capacity itself
// before an Accept, and so refuses a re-offer of a known ID when full.
func (s *sim) stepMachine(w *worker, in machine.Input) (machine.Batch, error) {
	if _, ok := in.(machine.Accept); ok && plant.On(plant.RefuseKnownWhenFull) && w.m.Queued() >= s.w.Policy.MaxQueued {
		return machine.Batch{}, machine.ErrQueueFull
	}
	return w.m.Step(in)
}

// plantedTimer is when the runtime's timer for a wake-up at fires: at
// once, or under LateTimer on the next whole second after it.
func plantedTimer(at time.Time) time.Time {
	if plant.On(plant.LateTimer) {
		return at.Truncate(time.Second).Add(time.Second)
	}
	return at
}

// plantedPersist is what the runtime writes of a batch's records.
func plantedPersist(recs []machine.Record) []machine.Record {
	if !plant.On(plant.ParkInMemory) {
		return recs
	}
	return slices.DeleteFunc(slices.Clone(recs), func(r machine.Record) bool { return r.State == machine.Parked })
}

// plantedRecords is what the runtime's loader hands Recover.
func plantedRecords(recs []machine.Record, now time.Time) []machine.Record {
	forget, due := plant.On(plant.RecoveryForgetsOutage), plant.On(plant.RecoveryIgnoresNextAt)
	if !forget && !due {
		return recs
	}
	out := slices.Clone(recs)
	for i := range out {
		if forget && out[i].State == machine.Parked {
			out[i].State = machine.Pending
		}
		if due && !out[i].State.Terminal() {
			out[i].NextAt = now
		}
	}
	return out
}
