//go:build plant

// This file proves that the planted bug Channel429Refused makes a 429 a
// rejection, and that without it a 429 is a failure to retry.
package httpchannel

import (
	"net/http"
	"testing"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
)

func TestChannel429Refused(t *testing.T) {
	reject, err := newRejectSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bug  plant.Bug
		want machine.Outcome
	}{{"", machine.OutcomeFailed}, {plant.Channel429Refused, machine.OutcomeRefused}} {
		restore, err := plant.Set(c.bug)
		if err != nil {
			t.Fatal(err)
		}
		o := classifyStatus(http.StatusTooManyRequests, http.Header{}, time.Now(), reject)
		restore()
		if o.Result != c.want {
			t.Errorf("bug %q: 429 is %s, want %s", c.bug, o.Result, c.want)
		}
	}
}
