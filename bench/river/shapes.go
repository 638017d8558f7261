package main

import (
	"context"
	"fmt"
	"math"
	"time"
)

// result is one side's figure in one round of one shape.
type result struct {
	rate      float64 // delivered events (completed jobs, items) per second
	published float64 // events published (jobs inserted) per second, in the steady shapes
	delivered int64
	xacts     float64 // committed transactions per delivered event; NaN when not counted
}

func (r result) String() string {
	s := fmt.Sprintf("%9.1f/s  (%d delivered)", r.rate, r.delivered)
	if r.published > 0 {
		s += fmt.Sprintf("  %.1f published/s", r.published)
	}
	if !math.IsNaN(r.xacts) {
		s += fmt.Sprintf("  %.2f xacts/delivered", r.xacts)
	}
	return s
}

// side is one system's way of running a shape.
type side struct {
	name string
	run  func(ctx context.Context) (result, error)
}

// shape is one figure of issue 26's Targets table: courier (sides[0])
// against the system it is compared with (sides[1]).
type shape struct {
	name  string
	sides [2]side
}

// shapes lists the shapes in the order each round runs them.
func shapes(o options) []shape {
	var out []shape
	for _, streams := range []int{1, 8, 64} {
		out = append(out, shape{name: fmt.Sprintf("pg drain, %d %s", streams, plural(streams, "stream")), sides: [2]side{
			{"courier", func(ctx context.Context) (result, error) { return courierDrainPG(ctx, o, streams) }},
			{"river", func(ctx context.Context) (result, error) { return riverDrain(ctx, o, streams) }},
		}})
	}
	for _, producers := range []int{8, 64} {
		out = append(out, shape{name: fmt.Sprintf("pg steady, %d producers", producers), sides: [2]side{
			{"courier", func(ctx context.Context) (result, error) { return courierSteadyPG(ctx, o, producers) }},
			{"river", func(ctx context.Context) (result, error) { return riverSteady(ctx, o, producers) }},
		}})
	}
	out = append(out, shape{name: "sqlite drain, 8 streams", sides: [2]side{
		{"courier", func(ctx context.Context) (result, error) { return courierDrainSQLite(ctx, o, 8) }},
		{"loop100", func(ctx context.Context) (result, error) { return loopDrainSQLite(ctx, o) }},
	}})
	return out
}

// waitFor polls n until it reaches want, and fails after timeout.
func waitFor(ctx context.Context, n func() int64, want int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for n() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("delivered %d of %d in %v", n(), want, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// split runs work(g) on k goroutines and returns the first error.
func split(k int, work func(g int) error) error {
	errs := make(chan error, k)
	for g := range k {
		go func() { errs <- work(g) }()
	}
	var first error
	for range k {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// plural is noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
