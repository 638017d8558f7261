// Package sim drives courier's worker (and through it the machine) in a
// deterministic discrete-event simulation: a virtual clock that starts at
// Epoch and only jumps, a queue of timed happenings whose ties are broken by the order
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
// # The senders run the production worker
//
// Every sender is a node running worker.Worker, the same worker the
// production shell (package courier) runs: it claims the stream, renews its
// lease, rebuilds its machine from the store, adopts what producers
// enqueue, saves every batch through the lease and gives the stream back
// when idle. The simulator holds none of that logic: it calls the worker
// at its Next, when replies come and when a local producer enqueues, on
// the node's clock (the virtual clock plus its skew), performs the sends
// and probes the worker hands out on the fake channel, and injects faults
// around it. As courier's loop does, a node's driver gathers the replies
// that come while it is busy and hands them over in one DeliverAll: the
// first reply into an empty inbox is handed over World.Driver.Gather
// later (at Gather 0, after what else that instant holds), with every
// reply that came meanwhile. The single sender is a cluster of one node;
// World.Cluster adds more.
//
// # The fakes and the faults
//
//   - Store: store/memstore, the contract's reference, on the virtual
//     clock; it refuses every call inside Cluster.StoreOutages. World.Store
//     fails single calls (storefaults.go): refused before they change
//     anything (store.ErrUnavailable), or a write's reply lost
//     (store.ErrUnknown), the write made or not; and bursts of refused
//     renewals, shorter and longer than a lease. A lost reply to a write
//     that was made is logged as the store made it. World.Store.Slow
//     makes single calls slow (slow.go): the world waits for them.
//   - Operator (operator.go): discards dead letters (or tries to discard
//     any event, which the store must refuse) and deletes settled records
//     past a retention, through the store's own calls; each action the
//     store takes is logged for the checker.
//   - Clock steps: a worker's clock jumps forward or back, by amounts on
//     either side of its ClockMargin.
//   - Channel: latency, outage windows (refused), flapping (intermittent
//     failure), lost replies (the receiver applied, the sender times out),
//     requests held in the network until after the sender gave up.
//   - Receiver: applies each ID at most once and discards duplicates;
//     fences on the stream sequence (applies only sequences above the last
//     it applied) when Receiver.Fence is set; poison and stubborn events.
//   - Real parts: with World.HTTP the channel and the receiver are not
//     fakes but webhook/httpchannel and webhook/receiver, joined in memory
//     by an http.RoundTripper that runs each round trip synchronously when
//     the request arrives (httpsim.go); the faults above become HTTP
//     (refused connections, a link's 502, resets and hangs after the
//     receiver answered, 429/500/503 with Retry-After, a secret rotation).
//     Options.Store runs the workers on another store than memstore, such
//     as SQLite (sim/sqlsim).
//   - The platform: with World.Platform, messages are published through
//     the production platform.Service on platmem to 2 to 4 endpoints, each
//     its own stream with its own filter, outages, flapping, rate limit
//     and retry policy (platform.EndpointPolicy, by which the checker
//     judges its stream); the workers' Policy is platform.StreamPolicy.
//     Publishes crash mid fan-out and are finished by Service.Redrive; the
//     operator creates endpoints late and replays what they missed
//     (Service.ReplayMissing), disables and enables endpoints through the
//     platform store, and replays an endpoint's dead letters in bulk
//     through platform.ReplayDeadPage, or as a job in the platform store
//     whose serve crashes and that another resumes from its cursor
//     (platform.ResumeDeadPage) (platform.go).
//   - Producer: enqueues each event, resends it (same ID) if no
//     acknowledgement comes within AckTimeout, optionally sends it twice.
//     The first node is its host and is notified, as Service.Publish
//     notifies its worker.
//   - Restarts and crashes: a node's worker and memory are dropped, its
//     lease left to expire; it comes back as a new incarnation (a new
//     Owner). Requests already on the wire may still land; their replies
//     reach nobody. The single sender may also crash right after a call
//     that persisted attempts and before it sends them.
//   - Pauses: a node stalls between the deadline check and its sends; it
//     sends when it wakes, a zombie if its lease ran out meanwhile.
//   - Stalls: a node freezes inside a call after reading its clock and
//     makes the call on that stale reading when it wakes: only the
//     store's fencing stands between it and a stale write.
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
// hash (xxHash64: the hash pins a run against regressions and across
// platforms, nobody is adversarial here, and SHA-256 cost 8% of a run),
// the observation log the invariants package judged, its
// violations, and the run's Stats. Every run allocates its own memory:
// nothing is kept from one run to the next.
//
// # Files
//
// world.go is the World a run simulates and its validation; run.go runs
// it (the event queue, the loop, the result); nodes.go is the senders,
// each running worker.Worker against the shared store; channel.go the
// fake network (sends, probes, their answers); receiver.go the fake
// downstream system; httpworld.go and httpsim.go the real HTTP channel
// and receiver kit of an HTTP world; backend.go the store a run uses;
// producer.go the producer's offers and resends;
// faults.go the worker faults and the coverage matrix; storefaults.go
// the store calls that fail; slow.go the slow ones; operator.go the
// operator's actions and the clock steps; platform.go the platform worlds;
// trace.go the trace lines and their hash.
package sim
