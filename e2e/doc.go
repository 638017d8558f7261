// Package e2e holds courier's end-to-end tests: the real runtime
// (courier.Service) on a real SQLite file (store/sqlitestore), the HTTP
// channel (webhook/httpchannel) signing real requests to a real receiver
// built with the kit (webhook/receiver) on loopback, behind a reverse
// proxy that injects faults: outages (connection refused, then 503),
// bursts of 5xx, replies dropped after the receiver applied, replies
// slower than the attempt timeout, and 429 with Retry-After.
//
// TestEndToEnd records what the producer was acknowledged, what the store
// persisted, what the worker sent and what the receiver applied as an
// invariants.Run per stream, and invariants.Check judges it: the same
// checker that judges the simulator's runs.
//
// TestKillLoop runs the courier side in a child process (this test
// binary, re-executed) and kills it with SIGKILL at seeded random moments,
// restarting it on the same SQLite file, while the receiver lives on in
// the parent. Each child prints its log entries (only after the call each
// records returned), and announces each Save before making it, with the
// worker's clock reading for the step; after each kill the parent reads
// back from the file any durable write whose line the kill cut off, and
// logs it at the reading announced. After a last run that
// drains, invariants.Check judges the merged log, and nothing acknowledged
// is lost, nothing is applied twice and every stream was applied in order.
//
// The package has no code of its own: everything here is a test.
package e2e
