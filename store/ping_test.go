// This file proves that store.Ping asks a Pinger its own Ping and any
// other Store with a Get, for which not found is an answer.
package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// wrapped hides its Store's Ping, as a wrapper that embeds the interface
// does; failGet makes its Get fail.
type wrapped struct {
	store.Store
	failGet error
}

func (w wrapped) Get(ctx context.Context, id string) (store.Record, error) {
	if w.failGet != nil {
		return store.Record{}, w.failGet
	}
	return w.Store.Get(ctx, id)
}

func TestPing(t *testing.T) {
	ms := memstore.New(time.Now)
	ms.SetUnavailable(func() bool { return true })
	if err := store.Ping(t.Context(), ms); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping of an unavailable Pinger: %v, want %v (its own Ping)", err, store.ErrUnavailable)
	}
	if err := store.Ping(t.Context(), wrapped{Store: memstore.New(time.Now)}); err != nil {
		t.Errorf("Ping of a wrapped store: %v, want nil (not found is an answer)", err)
	}
	down := errors.Join(store.ErrUnavailable, errors.New("no connection"))
	if err := store.Ping(t.Context(), wrapped{Store: memstore.New(time.Now), failGet: down}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping of a wrapped store whose Get fails: %v, want %v", err, store.ErrUnavailable)
	}
}
