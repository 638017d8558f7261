package machine

import "time"

// The jitter function is part of the machine's contract: a port that wants
// the same delays (and so the same test vectors) must compute exactly this.
//
//	key    = FNV-1a 64 of the key bytes (the event ID; "\x00probe" for probes)
//	x      = splitmix64(splitmix64(Seed XOR key) + n)      n = attempt or probe number
//	d      = min(base << (n-1), max)                         (saturating)
//	span   = d / 100 * JitterPercent                         (integer nanoseconds)
//	delay  = d - span + x mod (span + 1)
//
// All arithmetic is on unsigned 64-bit integers, wrapping.

const probeKey = "\x00probe"

func fnv1a64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// capped returns min(base << (n-1), max) without overflowing.
func capped(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	if d > max {
		return max
	}
	return d
}

func jittered(d time.Duration, seed uint64, key string, n int, percent int) time.Duration {
	span := uint64(d) / 100 * uint64(percent)
	if span == 0 {
		return d
	}
	x := splitmix64(splitmix64(seed^fnv1a64(key)) + uint64(n))
	return time.Duration(uint64(d) - span + x%(span+1))
}

// Backoff is the delay before the attempt after failed attempt n (n >= 1)
// of the event id, before any Retry-After hint is applied. It is exported
// so that tests, the simulator and ports can check the schedule.
func (c Config) Backoff(id string, n int) time.Duration {
	return jittered(capped(c.BaseBackoff, c.MaxBackoff, n), c.Seed, id, n, c.JitterPercent)
}

// ProbeBackoff is the wait after the k-th consecutive failed probe (k >= 1)
// before the next probe is sent.
func (c Config) ProbeBackoff(k int) time.Duration {
	return jittered(capped(c.ProbeBaseInterval, c.ProbeMaxInterval, k), c.Seed, probeKey, k, c.JitterPercent)
}

// retryDelay applies a Retry-After hint to the backoff: a valid hint can
// only postpone, and never beyond MaxRetryAfter.
func (c *Config) retryDelay(id string, n int, retryAfter time.Duration) time.Duration {
	d := c.Backoff(id, n)
	if c.MaxRetryAfter > 0 && retryAfter > 0 {
		retryAfter = min(retryAfter, c.MaxRetryAfter)
		d = max(d, retryAfter)
	}
	return d
}
