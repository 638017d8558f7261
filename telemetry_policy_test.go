// This file proves that a stream given back because its policy changed
// (worker.ErrPolicyChanged: an operator changed an endpoint's limits) is
// logged at INFO as such, not as a worker fault at ERROR; any other
// fault still is.
package courier

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/worker"
)

func TestPolicyChangeIsLoggedAsNoFault(t *testing.T) {
	var logs bytes.Buffer
	tel := &telemetry{log: slog.New(slog.NewTextHandler(&logs, nil)), paused: map[string]time.Time{}}
	tel.Observe(worker.Event{Kind: worker.Faulted, Stream: "ep_x", Err: fmt.Errorf("policy for stream %q: %w", "ep_x", worker.ErrPolicyChanged)})
	if got := logs.String(); !strings.Contains(got, "level=INFO") || !strings.Contains(got, "policy changed") || strings.Contains(got, "fault") {
		t.Errorf("a policy change logged %q; want one INFO line saying the policy changed, no fault", got)
	}
	logs.Reset()
	tel.Observe(worker.Event{Kind: worker.Faulted, Stream: "ep_x", Err: fmt.Errorf("policy for stream %q: store down", "ep_x")})
	if got := logs.String(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "worker fault") {
		t.Errorf("another fault logged %q; want an ERROR worker fault", got)
	}
}
