// Package scenarios holds courier's named fault scenarios. Each one reads
// like a spec: a name, one sentence of why it exists, the faults it
// injects, and what it must show beyond the general invariants, which its
// Check asserts. `go test ./scenarios` runs every scenario over
// StandardSeeds seeds; `simrun run -scenario NAME -seed N -trace` replays
// one; RESULTS.md reports them all.
//
// Every scenario starts from Base (40 events, 5..50ms latency) and Policy
// (strict order, ten attempts, 200ms..5s backoff), and changes only what
// its faults need, so the scenarios differ in one thing at a time.
package scenarios
