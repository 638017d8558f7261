// Tests that Publish refuses, before storing anything, an event that the
// channel says it could never carry (channel.Checker), and stores the
// rest.
package courier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

var errTooBig = errors.New("payload over the channel's limit")

// checkingChannel refuses payloads over limit at acceptance.
type checkingChannel struct {
	slowChannel
	limit int
}

func (c *checkingChannel) Check(stream, id string, payload []byte) error {
	if len(payload) > c.limit {
		return errTooBig
	}
	return nil
}

func TestPublishRefusesWhatTheChannelCannotCarry(t *testing.T) {
	st := memstore.New(time.Now)
	ch := &checkingChannel{limit: 4}
	svc := newSlowService(t, st, ch, machine.DefaultConfig(), 1, time.Second)
	ctx := context.Background()

	if _, err := svc.Publish(ctx, "s", "big", []byte("12345")); !errors.Is(err, errTooBig) {
		t.Fatalf("Publish of an oversize payload: err = %v, want %v", err, errTooBig)
	}
	if _, err := st.Get(ctx, "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused event was stored: Get err = %v", err)
	}
	if _, err := svc.Publish(ctx, "s", "small", []byte("1234")); err != nil {
		t.Fatalf("Publish within the limit: %v", err)
	}
	if _, err := st.Get(ctx, "small"); err != nil {
		t.Fatalf("an accepted event is not in the store: %v", err)
	}
}

var _ channel.Checker = (*checkingChannel)(nil)
