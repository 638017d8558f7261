package httpchannel

import (
	"net/http"
	"strconv"
	"time"
)

// MaxRetryAfter bounds what ParseRetryAfter returns; the machine caps the
// hint much lower (machine.Config.MaxRetryAfter).
const MaxRetryAfter = 7 * 24 * time.Hour

// ParseRetryAfter reads a Retry-After value in either form: delay-seconds
// (digits only) or an HTTP-date (IMF-fixdate, or the obsolete RFC 850 and
// asctime forms), relative to now. A date in the past gives 0 and true.
// Anything else (empty, negative, fractional, garbage) gives 0 and false.
// The result never exceeds MaxRetryAfter.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0, false
			}
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(MaxRetryAfter/time.Second) { // overflow or huge: cap
			return MaxRetryAfter, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	switch {
	case d < 0:
		return 0, true
	case d > MaxRetryAfter:
		return MaxRetryAfter, true
	}
	return d, true
}
