// Package worker is the one worker of courier: the logic that owns
// streams of a shared store (store.Store) and carries out their
// machines' batches. The simulator and the production shell (package
// courier, at the module's root) are both loops over it, as etcd's
// node.go is a loop over RawNode: the code the simulator proves is the
// code that ships.
//
// # What it does
//
// A Worker owns up to MaxStreams streams. It claims due streams
// (store.ClaimDue), renews each lease every RenewEvery (LeaseTTL/3 by
// default), rebuilds each stream's machine from the store's records
// (machine.Recover) and adopts what producers enqueue later
// (machine.Adopt), and carries out every batch in the order machine.Batch
// requires: Save through the lease, then hand out the sends and probes,
// then tick at WakeAt (a zero WakeAt means no tick). It gives a stream
// back (store.Release) once nothing has been left to do for IdleRelease,
// releases a parked stream whose next probe is more than FarRelease away
// until then (store.ReleaseUntil), and, full, yields a stream owned for
// YieldAfter when the store grants a waiting one in its place, so that
// every stream's wait for an owner is bounded (WaitBound, schedule.go).
// It asks Config.Policy again at each renewal: a stream refused there (an
// operator paused it) drains as a stopping worker does, and is given back
// once the attempts it sent are answered. A reply that finds the renewal
// overdue (the worker stalled) waits for it and its Policy check. When
// its own clock says a lease ran out, the worker renews once more before
// it gives the lease up: a renewal whose reply was lost may have kept it.
// A lease lost in the middle of a call takes back the sends and probes
// that call handed out under it.
//
// When the store refuses a write as stale (store.ErrStaleLease), the
// worker drops the stream's machine and never acts on the stream again:
// no send, no write; replies for it are dropped. When any other store
// error leaves a Save's outcome unknown (the reply was lost, the store was
// unavailable), the worker re-reads before acting: it drops the machine
// and rebuilds it from what the store holds, which is right whether the
// batch was written or not, because nothing of it was acted on.
//
// # Driving it
//
// The Worker reads no clock, starts no goroutine and sets no timer. Its
// inputs are calls that carry the driver's clock reading; its outputs are
// the store calls it makes itself (each with the caller's context), the
// Effects it returns, and the Events it reports to an Observer:
//
//	w, err := worker.New(cfg)
//	for {
//		fx := w.Advance(ctx, now) // renew, rebuild, adopt, tick, release, claim
//		for _, s := range fx.Sends { /* send it; later: fx = w.Deliver(ctx, now, s.Reply(outcome)) */ }
//		for _, p := range fx.Probes { /* probe; later: fx = w.Deliver(ctx, now, p.Reply(outcome)) */ }
//		// sleep until w.Next(), a Deliver, or a local producer's publish:
//		// w.Enqueued(rec) hands over the record it created (adopted
//		// without a read), w.Notify(stream) says only that there is one
//	}
//
// A driver must not start a Send at or after its Deadline: the worker's
// clock then says the lease may have run out. With that rule, a worker
// that stalls (a long pause between persisting an attempt and sending
// it) sends that attempt late by at most one LeaseTTL after its last
// successful grant or renewal, plus the call's Timeout and the network's
// delay; this is the bound a receiver's deduplication window must cover on
// top of MaxAge. ClockMargin keeps the bound when the worker's clock runs
// slower than the store's by up to that much per lease.
//
// Drain and Stop give a graceful shutdown: Drain claims and starts
// nothing more while attempts in flight finish (their replies are still
// persisted), and Stop releases every lease.
//
// # Store calls
//
// The worker calls the store synchronously, on the driver's goroutine,
// one call at a time. That keeps it deterministic under the simulator
// (whose store is in memory) and keeps the contract's order obvious;
// a driver bounds each call with the context it passes.
package worker
