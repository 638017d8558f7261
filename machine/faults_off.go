//go:build !plant

package machine

// plantedFaults returns no fault: a normal build has no planted bug.
func plantedFaults() faults { return faults{} }
