//go:build !race

// This file sets the tests' clocks for a normal build; it proves nothing
// by itself.
package e2e

// slowdown stretches attempt timeouts and the fault schedule (see
// race_test.go); 1 in a normal build.
const slowdown = 1
