package worker

import (
	"errors"
	"slices"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// The planted runtime bugs of the simulator's catalogue (internal/plant),
// in the one place a runtime's bugs can be: here, with the machine's bugs
// that a runtime could cause from outside (ExpireEarly hands the machine
// half the stream's MaxAge, RecoveryForgetsInFlight hides records from
// Recover). The bugs that need the machine's insides are the machine's
// own (machine/faults.go). In a normal build
// plant.On is a constant false and every function below returns its input
// unchanged; the hooks fold away. Only a build with the tag plant can
// switch one on, and only the simulator's catch matrix does.

// plantedConfig is the config the worker hands a stream's machine.
func plantedConfig(p machine.Config) machine.Config {
	switch {
	case plant.On(plant.BackoffTooShort):
		p.BaseBackoff, p.MaxBackoff = max(p.BaseBackoff/4, 1), max(p.MaxBackoff/4, 1)
	case plant.On(plant.BreakerNeverTrips):
		p.BreakerThreshold = 1 << 30
	case plant.On(plant.AgeOverrun):
		p.MaxAge *= 2
	case plant.On(plant.ExpireEarly):
		p.MaxAge = max(p.MaxAge/2, 1)
	}
	return p
}

// plantedWake is when the worker ticks a machine that asked for at: at
// once, or under LateTimer on the next whole second after it.
func plantedWake(at time.Time) time.Time {
	if !at.IsZero() && plant.On(plant.LateTimer) {
		return at.Truncate(time.Second).Add(time.Second)
	}
	return at
}

// plantedRetryAfter is the receiver's hint as the worker passes it on.
func plantedRetryAfter(d time.Duration) time.Duration {
	if plant.On(plant.RetryAfterIgnored) {
		return 0
	}
	return d
}

// plantedPersist is what the worker writes of a batch's records.
func plantedPersist(recs []machine.Record) []machine.Record {
	if !plant.On(plant.ParkInMemory) {
		return recs
	}
	return slices.DeleteFunc(slices.Clone(recs), func(r machine.Record) bool { return r.State == machine.Parked })
}

// plantedRecords is what the worker's loader hands Recover.
func plantedRecords(recs []machine.Record, now time.Time) []machine.Record {
	if plant.On(plant.RecoveryForgetsInFlight) {
		// The events that had an attempt out when the sender died.
		return slices.DeleteFunc(slices.Clone(recs), func(r machine.Record) bool {
			return !r.State.Terminal() && r.Attempts > 0
		})
	}
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

// sendsBeforeSave reports whether the worker hands out a batch's sends
// before it saves the batch: SendBeforePersist.
func sendsBeforeSave() bool { return plant.On(plant.SendBeforePersist) }

// plantedActsOn reports whether the worker acts on a batch whose save
// failed with err as if it were written: UnknownSaveActedOn, for a lost
// reply.
func plantedActsOn(err error) bool {
	return plant.On(plant.UnknownSaveActedOn) && errors.Is(err, store.ErrUnknown)
}

// plantedActsOnStale reports whether the worker hands out the sends of a
// batch, saved with others in one store call, that the store refused
// with err as written under a stale lease: BatchActsOnRefused.
func plantedActsOnStale(err error) bool {
	return plant.On(plant.BatchActsOnRefused) && errors.Is(err, store.ErrStaleLease)
}

// plantedKeepsMachine reports whether the worker keeps its machine after
// a save that failed with err: RefusedSaveKeepsMachine, for a refusal.
func plantedKeepsMachine(err error) bool {
	return plant.On(plant.RefusedSaveKeepsMachine) && errors.Is(err, store.ErrUnavailable)
}

// policy asks Policy for stream's delivery policy, at each takeover.
// Under PolicyCached the first answer is kept for good, so a pause set
// later is never seen; under PauseSticky a refusal is kept for two minutes,
// so a resume is seen late.
func (w *Worker) policy(stream string) (machine.Config, error) {
	if plant.On(plant.PauseSticky) {
		return w.stickyPolicy(stream)
	}
	if !plant.On(plant.PolicyCached) {
		return w.cfg.Policy(stream)
	}
	if cfg, ok := w.policies[stream]; ok {
		return cfg, nil
	}
	cfg, err := w.cfg.Policy(stream)
	if err == nil {
		if w.policies == nil {
			w.policies = map[string]machine.Config{}
		}
		w.policies[stream] = cfg
	}
	return cfg, err
}

// renewGivesUp reports whether the worker gives its lease up after a
// renewal refused with err: under RenewGivesUpAtOnce, after one the
// store refused as unavailable.
func renewGivesUp(err error) bool {
	return plant.On(plant.RenewGivesUpAtOnce) && errors.Is(err, store.ErrUnavailable)
}

// stickyPolicy is Policy under PauseSticky: a stream refused is refused
// again, without asking, for two minutes by the worker's clock.
func (w *Worker) stickyPolicy(stream string) (machine.Config, error) {
	if until, ok := w.refused[stream]; ok && w.now.Before(until) {
		return machine.Config{}, errors.New("policy refused within the last two minutes (cached)")
	}
	cfg, err := w.cfg.Policy(stream)
	if err != nil {
		if w.refused == nil {
			w.refused = map[string]time.Time{}
		}
		w.refused[stream] = w.now.Add(2 * time.Minute)
	}
	return cfg, err
}
