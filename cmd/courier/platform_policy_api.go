package main

import (
	"net/http"
	"slices"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// retryView is an endpoint's retry and status policy as its stream has
// it: the defaults shown where the endpoint keeps none.
type retryView struct {
	MaxAttempts    int    `json:"max_attempts"`
	BaseBackoff    string `json:"base_backoff"` // a Go duration: "1s", "250ms"
	MaxBackoff     string `json:"max_backoff"`
	RejectStatuses []int  `json:"reject_statuses"`
}

func viewRetry(e platform.Endpoint) retryView {
	p := platform.EndpointPolicy(machine.DefaultConfig(), e)
	reject := httpchannel.DefaultStatusPolicy().RejectOn
	if sp := platform.StatusPolicy(e); sp != nil {
		reject = slices.Clone(sp.RejectOn)
	}
	return retryView{MaxAttempts: p.MaxAttempts, BaseBackoff: p.BaseBackoff.String(), MaxBackoff: p.MaxBackoff.String(),
		RejectStatuses: reject}
}

// retryIn is the retry and status policy of an endpoint's create or
// update body: an absent field keeps its value (in a create, the
// default). max_attempts 0, and a backoff of "0s", are the default again.
type retryIn struct {
	MaxAttempts    *int    `json:"max_attempts"`
	BaseBackoff    *string `json:"base_backoff"`
	MaxBackoff     *string `json:"max_backoff"`
	RejectStatuses *[]int  `json:"reject_statuses"`
}

// applyRetry sets the fields in gives on e; a backoff that is no Go
// duration is answered 400 naming it, and false returned. The store
// checks the values (platform.CheckEndpoint).
func (in retryIn) applyRetry(w http.ResponseWriter, e *platform.Endpoint) bool {
	if in.MaxAttempts != nil {
		e.MaxAttempts = *in.MaxAttempts
	}
	for _, f := range []struct {
		name string
		in   *string
		dst  *time.Duration
	}{{"base_backoff", in.BaseBackoff, &e.BaseBackoff}, {"max_backoff", in.MaxBackoff, &e.MaxBackoff}} {
		if f.in == nil {
			continue
		}
		d, err := time.ParseDuration(*f.in)
		if err != nil {
			writeField(w, f.name, "%q is not a duration (like \"500ms\", \"2s\" or \"5m\")", clipText(*f.in))
			return false
		}
		*f.dst = d
	}
	if in.RejectStatuses != nil {
		e.RejectStatuses = slices.Clone(*in.RejectStatuses)
		if e.RejectStatuses == nil {
			e.RejectStatuses = []int{} // "[]": none rejected, not the default
		}
	}
	return true
}
