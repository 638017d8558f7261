//go:build race

// This file slows the tests' clocks under the race detector; it proves
// nothing by itself.
package e2e

// slowdown stretches attempt timeouts, the fault schedule and deadlines: under -race
// the pure-Go SQLite runs several times slower, and a schedule sized for a
// normal build would end before the first deliveries.
const slowdown = 8
