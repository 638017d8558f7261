// Examples: a channel built, an event checked at acceptance and sent; the output is the outcome.
package httpchannel_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// A channel to one endpoint. In production leave AllowAddrs empty; here
// the receiver is on loopback, which the SSRF policy refuses otherwise.
func Example() {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	ch, err := httpchannel.New(httpchannel.Config{
		Endpoint:   receiver.URL + "/hooks",
		Secrets:    []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err) // invalid config: refuse to start
	}
	defer ch.Close()

	payload := []byte(`{"order": 42}`)
	if err := ch.Check("orders", "evt_42", payload); err != nil {
		panic(err) // at acceptance: refuse the event to its producer
	}
	o := ch.Send(context.Background(), channel.Attempt{Stream: "orders", ID: "evt_42", Seq: 1, Attempt: 1, Payload: payload})
	fmt.Println(o.Result, o.Status)
	// Output: delivered 204
}
