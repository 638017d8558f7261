package plant

// The policy catalogue: bugs that break the policy rules of the checker
// (issue 13) rather than the safety guarantees. Each lives in the worker
// (package worker, the runtime both the simulator and production run),
// in the shared store (memstore), or in a fake; none in the machine,
// whose policy they bend from outside, as a careless runtime would.
const (
	// RetryAfterIgnored: the runtime drops the receiver's Retry-After hint
	// before it reaches the machine (worker).
	RetryAfterIgnored Bug = "retry-after-ignored"
	// BackoffTooShort: the runtime hands the machine a backoff four times
	// shorter than the stream's policy (worker).
	BackoffTooShort Bug = "backoff-too-short"
	// LateTimer: the runtime's timer fires on the whole second after the
	// machine's WakeAt, so every retry goes out late (worker).
	LateTimer Bug = "late-timer"
	// BreakerNeverTrips: the runtime hands the machine a breaker threshold
	// no streak reaches (worker).
	BreakerNeverTrips Bug = "breaker-never-trips"
	// ParkInMemory: the runtime leaves parked records out of the writes
	// it persists: the backlog is parked only in memory (worker).
	ParkInMemory Bug = "park-in-memory"
	// RecoveryForgetsOutage: the runtime's loader reads parked records as
	// pending, so a restarted worker forgets the outage (worker).
	RecoveryForgetsOutage Bug = "recovery-forgets-outage"
	// RecoveryIgnoresNextAt: the runtime's loader makes every record due
	// at once, so a restarted worker resends before NextAt (worker).
	RecoveryIgnoresNextAt Bug = "recovery-ignores-next-at"
	// AgeOverrun: the runtime hands the machine twice the stream's MaxAge
	// (worker).
	AgeOverrun Bug = "age-overrun"
	// RenewShrinks: a renewal sets the lease's expiry to now + ttl even
	// when that is earlier than it was (memstore).
	RenewShrinks Bug = "renew-shrinks"
	// WriteAfterExpiry: the store accepts a write from the newest lease
	// after it expired (memstore).
	WriteAfterExpiry Bug = "write-after-expiry"
	// ProbeHealthyInOutage: the fake channel answers probes healthy during
	// an outage; its self-check must stop the run (sim fake).
	ProbeHealthyInOutage Bug = "probe-healthy-in-outage"
)

func init() {
	for bug, rule := range map[Bug]string{
		RetryAfterIgnored:     "retry-timing",
		BackoffTooShort:       "retry-timing",
		LateTimer:             "retry-timing",
		BreakerNeverTrips:     "breaker",
		ParkInMemory:          "parking",
		RecoveryForgetsOutage: "recovery",
		RecoveryIgnoresNextAt: "recovery",
		AgeOverrun:            "age",
		RenewShrinks:          "leases",
		WriteAfterExpiry:      "leases",
		ProbeHealthyInOutage:  "crash",
	} {
		Expected[bug] = rule
	}
}
