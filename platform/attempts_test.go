// Tests of the attempt log's pure rules: when an endpoint's health
// disables it, and what ClipResponse keeps of a receiver's answer.
package platform_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/platform"
)

func TestDisableReason(t *testing.T) {
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	const after = 5 * 24 * time.Hour
	failing := platform.EndpointHealth{FailingSince: t0, Streak: 3}
	for _, c := range []struct {
		name   string
		h      platform.EndpointHealth
		status int
		at     time.Time
		want   string
	}{
		{"gone-at-once", platform.EndpointHealth{}, 410, t0, platform.DisabledGone},
		{"gone-while-failing", failing, 410, t0.Add(time.Hour), platform.DisabledGone},
		{"failing-not-long-enough", failing, 503, t0.Add(after - time.Microsecond), ""},
		{"failing-exactly-long-enough", failing, 503, t0.Add(after), platform.DisabledFailing},
		{"failing-with-no-answer", failing, 0, t0.Add(after + time.Hour), platform.DisabledFailing},
		{"healthy", platform.EndpointHealth{LastSuccess: t0}, 503, t0.Add(10 * after), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := platform.DisableReason(c.h, platform.Attempt{Status: c.status, At: c.at}, after)
			if got != c.want {
				t.Errorf("DisableReason = %q; want %q", got, c.want)
			}
		})
	}
}

// A failed attempt after a success starts the streak at its own time;
// Reenabled forgets the streak and the disabling, not the counts.
func TestNoteAndReenabled(t *testing.T) {
	t0 := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	var h platform.EndpointHealth
	h = h.Note(platform.Attempt{At: t0, Outcome: platform.OutcomeDelivered})
	h = h.Note(platform.Attempt{At: t0.Add(time.Second), Outcome: platform.OutcomeFailed})
	h = h.Note(platform.Attempt{At: t0.Add(2 * time.Second), Outcome: platform.OutcomeTimeout})
	h.DisabledReason, h.DisabledAt = platform.DisabledFailing, t0.Add(3*time.Second)
	want := platform.EndpointHealth{LastAttempt: t0.Add(2 * time.Second), LastSuccess: t0, FailingSince: t0.Add(time.Second),
		Streak: 2, Successes: 1, Failures: 2, DisabledReason: platform.DisabledFailing, DisabledAt: t0.Add(3 * time.Second)}
	if d := cmp.Diff(want, h); d != "" {
		t.Errorf("after three attempts (-want +got):\n%s", d)
	}
	want.FailingSince, want.Streak, want.DisabledReason, want.DisabledAt = time.Time{}, 0, "", time.Time{}
	if d := cmp.Diff(want, h.Reenabled()); d != "" {
		t.Errorf("Reenabled (-want +got):\n%s", d)
	}
}

func TestClipResponse(t *testing.T) {
	h := http.Header{
		"Set-Cookie":       {"session=secret"},
		"Www-Authenticate": {"Bearer"},
		"X-Request-Id":     {"r1"},
		"X-Huge":           {strings.Repeat("h", platform.MaxResponseHeaderBytes)},
		"Content-Type":     {"text/plain"},
	}
	body := []byte(strings.Repeat("b", platform.MaxResponseBodyBytes+10))
	gotH, gotB := platform.ClipResponse(h, body)
	wantH := http.Header{"Content-Type": {"text/plain"}, "X-Request-Id": {"r1"}}
	if d := cmp.Diff(wantH, gotH); d != "" {
		t.Errorf("headers (-want +got):\n%s", d)
	}
	if len(gotB) != platform.MaxResponseBodyBytes {
		t.Errorf("body kept %d bytes; want %d", len(gotB), platform.MaxResponseBodyBytes)
	}
	a := platform.Attempt{ID: platform.NewID(platform.AttemptKind, time.Now()), AppID: platform.NewID(platform.AppKind, time.Now()),
		MessageID: platform.NewID(platform.MessageKind, time.Now()), EndpointID: platform.NewID(platform.EndpointKind, time.Now()),
		At: time.Now(), Outcome: platform.OutcomeFailed, ResponseHeaders: gotH, ResponseBody: gotB}
	a.DeliveryID = platform.DeliveryID(a.MessageID, a.EndpointID)
	if err := platform.CheckAttempt(a); err != nil {
		t.Errorf("CheckAttempt of a clipped answer: %v", err)
	}
}
