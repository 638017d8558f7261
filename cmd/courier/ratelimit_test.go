// This file proves an endpoint's rate limit on a real `courier serve`
// (SQLite file, loopback HTTP): rate_limit is shown, changed by PATCH
// and refused out of range with an error naming the field; and a burst
// of messages to an endpoint limited to 4 attempts a second reaches its
// receiver no faster: no second holds more than 4 arrivals (with 100ms of
// slack for loopback jitter), and the burst takes the two seconds the
// limit needs.
package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestPlatformRateLimit(t *testing.T) {
	const (
		limit = 4
		burst = 12
		slack = 100 * time.Millisecond
	)
	srv, arrived := arrivalServer(t)
	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"tick"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps := base + "/v1/apps/" + app + "/endpoints"
	for _, bad := range []string{`-1`, `10001`, `1.5`} {
		r := call(t, "POST", eps, token, `{"url":"`+srv.URL+`","rate_limit":`+bad+`}`)
		if r.status != 400 || (r.body["field"] != "rate_limit" && bad != `1.5`) {
			t.Errorf("rate_limit %s: %d %v; want 400 naming rate_limit", bad, r.status, r.body)
		}
	}
	plain := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/plain","enabled":false}`)
	if plain["rate_limit"] != 0.0 {
		t.Errorf("an endpoint created without a limit shows rate_limit %v; want 0", plain["rate_limit"])
	}
	ep := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/hook","ordering":"independent","rate_limit":`+strconv.Itoa(limit)+`}`)
	id := ep["id"].(string)
	if ep["rate_limit"] != float64(limit) {
		t.Fatalf("created with rate_limit %d, shows %v", limit, ep["rate_limit"])
	}
	if got := mustCall(t, 200, "PATCH", eps+"/"+plain["id"].(string), `{"rate_limit":7}`); got["rate_limit"] != 7.0 {
		t.Errorf("PATCH rate_limit 7 shows %v", got["rate_limit"])
	}
	r := call(t, "PATCH", eps+"/"+id, token, `{"rate_limit":-3}`)
	if r.status != 400 || r.body["field"] != "rate_limit" {
		t.Errorf("PATCH rate_limit -3: %d %v; want 400 naming rate_limit", r.status, r.body)
	}
	if got := mustCall(t, 200, "GET", eps+"/"+id, ""); got["rate_limit"] != float64(limit) {
		t.Errorf("after a refused PATCH rate_limit is %v; want %d", got["rate_limit"], limit)
	}

	for i := range burst {
		mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"tick","payload":{"n":`+strconv.Itoa(i)+`}}`)
	}
	eventually(t, "the burst arrived", func() bool { return len(arrived()) >= burst })
	at := arrived()
	for i := limit; i < len(at); i++ {
		if gap := at[i].Sub(at[i-limit]); gap < time.Second-slack {
			t.Errorf("arrivals %d and %d are %v apart: %d in less than a second (limit %d/s)", i-limit+1, i+1, gap, limit+1, limit)
		}
	}
	if span, least := at[len(at)-1].Sub(at[0]), time.Duration(burst/limit-1)*time.Second-slack; span < least {
		t.Errorf("%d arrivals took %v; a limit of %d/s needs at least %v", len(at), span, limit, least)
	}
}

// TestPlatformMaxInFlight: max_in_flight bounds the attempts an
// independent endpoint has in flight at once (a receiver that takes 200ms
// sees at most that many requests at a time, and that many at some
// point); strict ordering refuses more than one, naming the field.
func TestPlatformMaxInFlight(t *testing.T) {
	const (
		most  = 2
		burst = 6
	)
	var mu sync.Mutex
	now, peak, done := 0, 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now++
		peak = max(peak, now)
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		now--
		done++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"tick"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps := base + "/v1/apps/" + app + "/endpoints"
	for _, body := range []string{`{"url":"` + srv.URL + `","max_in_flight":2}`, `{"url":"` + srv.URL + `","ordering":"independent","max_in_flight":65}`} {
		if r := call(t, "POST", eps, token, body); r.status != 400 || r.body["field"] != "max_in_flight" {
			t.Errorf("POST %s: %d %v; want 400 naming max_in_flight", body, r.status, r.body)
		}
	}
	strict := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/s","enabled":false}`)
	indep := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/i","ordering":"independent","enabled":false}`)
	if strict["max_in_flight"] != 1.0 || indep["max_in_flight"] != 8.0 {
		t.Errorf("defaults: strict shows %v, independent %v; want 1 and 8", strict["max_in_flight"], indep["max_in_flight"])
	}
	ep := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/hook","ordering":"independent","max_in_flight":`+strconv.Itoa(most)+`}`)
	if ep["max_in_flight"] != float64(most) {
		t.Fatalf("created with max_in_flight %d, shows %v", most, ep["max_in_flight"])
	}
	for i := range burst {
		mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"tick","payload":{"n":`+strconv.Itoa(i)+`}}`)
	}
	eventually(t, "the burst was answered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done >= burst
	})
	mu.Lock()
	defer mu.Unlock()
	if peak != most {
		t.Errorf("at most %d requests were in flight at once; want the limit, %d", peak, most)
	}
}

// arrivalServer is a receiver that answers 204 and notes when each
// request arrived; arrived returns those times so far, in order.
func arrivalServer(t *testing.T) (srv *httptest.Server, arrived func() []time.Time) {
	t.Helper()
	var mu sync.Mutex
	var arrivals []time.Time
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(arrivals)
	}
}
