package machine

// faults are the planted bugs that live in the machine: deliberate faults
// that prove the invariant checker catches the real bugs they imitate
// (the catalogue is internal/plant). A machine's faults are fixed when it
// is made, by plantedFaults: in a normal build (faults_off.go) it returns
// none, and no code can set one, so a shipped binary cannot misbehave; in
// a build with the tag plant (faults_plant.go) it reads the bug switched
// on. The machine imports internal/plant only in that build.
//
// Only the bugs that need the machine's insides are here. The ones a
// careless runtime could cause from outside (a halved MaxAge, records
// lost on recovery, a shortened backoff...) are the worker's
// (worker/planted.go), which hands the machine a bent config or records.
type faults struct {
	// unboundedRetries: MaxAttempts is ignored; a failing event is
	// retried until MaxAge.
	unboundedRetries bool
	// exhaustEarly: an event is given up one attempt before MaxAttempts.
	exhaustEarly bool
	// poisonBlocksForever: an event that exhausts its attempts is neither
	// dead nor ever expires; it stays in retry and holds the stream.
	poisonBlocksForever bool
	// drainOutOfOrder: when the circuit closes, the parked backlog is
	// released newest first.
	drainOutOfOrder bool
	// sendWhileOpen: dispatch ignores an open circuit.
	sendWhileOpen bool
	// windowOverflow: twice the window's attempts go out at once, two in
	// strict order.
	windowOverflow bool
	// rateResetOnProbe: a healthy probe forgets the recent attempt
	// starts, so the rate limit begins afresh.
	rateResetOnProbe bool
}
