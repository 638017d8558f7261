package plant

// The rate-limit catalogue (issue 27): a bug in the machine's rate limit,
// caught in the rate-limited scenario's worlds (the swarm draws no limit).
const (
	// RateResetOnProbe: a healthy probe makes the machine forget its
	// recent attempt starts, as if a closed circuit began a fresh budget,
	// so the drain after it can exceed the limit (machine).
	RateResetOnProbe Bug = "rate-reset-on-probe"
)

func init() {
	Expected[RateResetOnProbe] = "rate-limit"
}
