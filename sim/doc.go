// Package sim drives courier's machine through a deterministic
// discrete-event simulation: a virtual clock that starts at Epoch and only
// jumps, a queue of timed happenings whose ties are broken by the order
// they were scheduled, and fakes for everything the machine does not own.
//
// One root seed decides every random choice. Each part of the world (the
// producer, the channel, the restarts) draws from its own math/rand/v2
// PCG stream derived from the seed and the part's name, so a change to one
// fake's draws does not shift another's. The machine's jitter seed is
// whatever the World's Policy says (machine.Config.Seed); the scenarios'
// policies set it to the run's root seed (scenarios.Policy), so there too
// one seed decides everything. There are no goroutines, no wall clock and
// no I/O: the same World and seed give the same trace, byte for byte, on
// any platform (the golden hashes in testdata/golden pin it).
//
// # The fakes
//
//   - Store: durable; what it acknowledged survives a restart, and a batch
//     is written whole.
//   - Channel: latency, outage windows (refused), flapping (intermittent
//     failure), lost replies (the receiver applied, the sender times out),
//     requests held in the network until after the sender gave up.
//   - Receiver: applies each ID at most once and discards duplicates;
//     fences on the stream sequence (applies only sequences above the last
//     it applied) when Receiver.Fence is set; poison and stubborn events.
//   - Producer: offers each event, resends it (same ID) if no
//     acknowledgement comes within AckTimeout, optionally sends it twice.
//   - Restarts: the sender's memory is dropped at chosen or drawn instants,
//     or right after a batch is persisted and before it is acted on, and
//     rebuilt with machine.Recover from the store. Requests already on the
//     wire may still land; their replies reach the new sender, which
//     ignores them as stale.
//
// # Many workers
//
// With World.Cluster.Workers > 0 the sender is several workers sharing one
// store (memstore, the store package's contract). Producers enqueue into
// the store; each worker polls: it claims the stream when it has due work,
// rebuilds its machine from the store, adopts new records, renews its
// lease, and writes every batch through the lease's fencing check. Workers
// crash (their lease left to expire), stall past their lease and wake as
// zombies that send what they had persisted, run on skewed clocks, and the
// store refuses writes for a while. Polls are background chores: a run
// whose store is settled does not wait for them.
//
// # Phases
//
// Every fault is injected only before World.FaultsEnd (the safety phase);
// after it the world is healthy and the run must converge (the liveness
// phase), which the checker holds to invariants.LivenessBound. The run ends
// when nothing is left to happen, or at World.MaxDuration.
//
// # Output
//
// Run returns a Result: the stable trace lines (with Options.Trace), their
// SHA-256, the observation log the invariants package judged, its
// violations, and the run's Stats.
package sim
