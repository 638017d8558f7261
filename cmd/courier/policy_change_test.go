// This file proves that a PATCH of an endpoint's rate limit takes effect
// at the owner's next lease renewal, with no restart and no takeover, on
// a real `courier serve` (SQLite, loopback receiver, a 1.5 s lease
// renewed every 0.5 s): a burst of 12 messages to an endpoint limited to
// 1 a second arrives one a second until the limit is lifted, then the
// rest arrive at once, well before the 1/s limit would let them.
package main

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestPatchedRateLimitTakesEffectAtTheNextRenewal(t *testing.T) {
	const burst = 12
	srv, arrived := arrivalServer(t)
	c, err := ParseConfig(`
api_tokens = ["` + token + `"]
allow_loopback = true
poll = "50ms"
lease_ttl = "1500ms"
shutdown_timeout = "2s"
`)
	if err != nil {
		t.Fatal(err)
	}
	c.Listen, c.Database = "127.0.0.1:0", filepath.Join(t.TempDir(), "courier.db")
	base := startServeConfig(t, c)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"tick"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+srv.URL+`","rate_limit":1}`)["id"].(string)
	for i := range burst {
		mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"tick","payload":{"n":`+strconv.Itoa(i)+`}}`)
	}
	eventually(t, "three arrivals at 1/s", func() bool { return len(arrived()) >= 3 })
	if at := arrived(); at[2].Sub(at[0]) < 2*time.Second-100*time.Millisecond {
		t.Fatalf("three arrivals within %v: the 1/s limit did not hold before the PATCH", at[2].Sub(at[0]))
	}
	lifted := time.Now()
	mustCall(t, 200, "PATCH", base+"/v1/apps/"+app+"/endpoints/"+ep, `{"rate_limit":0}`)
	eventually(t, "the burst arrived", func() bool { return len(arrived()) >= burst })
	left := burst - 3
	// Under 2 s here; 6 s leaves room for a loaded machine and still
	// tells the change apart from the old limit, which needs 8 s.
	if took := arrived()[burst-1].Sub(lifted); took > 6*time.Second {
		t.Errorf("the last %d arrivals took %v after the limit was lifted; a renewal (0.5 s) and a new claim should do, where 1/s needs %ds",
			left, took, left-1)
	}
}
