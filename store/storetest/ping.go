package storetest

import (
	"context"
	"errors"

	"github.com/courierlab/courier/store"
)

// pingAnswers: a store that is a store.Pinger (every backend courier
// ships) answers Ping with nil and changes nothing, no record and no
// lease; store.Ping asks it the same; a context already done gets
// ctx.Err(). A store that is not a Pinger has nothing to prove here.
func pingAnswers(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w")
	before := e.snapshot("e1")
	p, ok := e.s.(store.Pinger)
	if !ok {
		e.t.Logf("%T is not a store.Pinger; store.Ping asks it with a Get", e.s)
	} else if err := p.Ping(e.ctx); err != nil {
		e.t.Errorf("Ping: %v, want nil", err)
	}
	if err := store.Ping(e.ctx, e.s); err != nil {
		e.t.Errorf("store.Ping: %v, want nil", err)
	}
	if ok {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		if err := p.Ping(ctx); !errors.Is(err, context.Canceled) {
			e.t.Errorf("Ping with a cancelled context: %v, want %v", err, context.Canceled)
		}
	}
	e.unchanged("Ping", before)
	e.leaseValid("the lease after Ping", l)
}
