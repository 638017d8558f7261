package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// ErrUnknownStream is what the router says of a stream the config does
// not declare.
var ErrUnknownStream = errors.New("unknown stream")

// router is a channel.Channel that sends each stream through its own
// httpchannel.Channel: each has its own URL and signing secrets. The
// streams of the platform's endpoints (platform.IsEndpointStream, names
// no config stream may take) go through eps, which reads the endpoint at
// send time.
type router struct {
	streams map[string]*httpchannel.Channel
	eps     *endpointChannels // nil: no platform
}

var (
	_ channel.Channel = (*router)(nil)
	_ channel.Checker = (*router)(nil)
)

// newRouter builds one HTTP channel per declared stream; eps, if not
// nil, sends the endpoints' streams.
func newRouter(c *Config, eps *endpointChannels, log *slog.Logger) (*router, error) {
	r := &router{streams: make(map[string]*httpchannel.Channel, len(c.Streams)), eps: eps}
	for name, s := range c.Streams {
		hc := httpchannel.Config{
			Endpoints:      map[string]string{name: s.URL},
			Secrets:        s.Secrets,
			AttemptTimeout: s.Policy().AttemptTimeout,
			MaxBodyBytes:   s.Policy().MaxPayloadBytes,
			ProbePath:      s.ProbePath,
			StatusPolicy:   s.StatusPolicy(),
			Logger:         log,
		}
		if c.AllowLoopback {
			hc.AllowAddrs = loopback
		}
		ch, err := httpchannel.New(hc)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("config: streams.%s: %w", name, err)
		}
		r.streams[name] = ch
	}
	return r, nil
}

// Close releases the channels' idle connections.
func (r *router) Close() {
	for _, ch := range r.streams {
		ch.Close()
	}
	if r.eps != nil {
		r.eps.Close()
	}
}

// endpoint reports whether stream is an endpoint's that eps sends.
func (r *router) endpoint(stream string) bool {
	return r.eps != nil && platform.IsEndpointStream(stream)
}

// Check refuses an event of an undeclared stream, then asks the stream's
// channel.
func (r *router) Check(stream, id string, payload []byte) error {
	if r.endpoint(stream) {
		return r.eps.Check(stream, id, payload)
	}
	ch, ok := r.streams[stream]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownStream, stream)
	}
	return ch.Check(stream, id, payload)
}

// Send carries the attempt over its stream's channel. A stream the config
// no longer declares (it was removed while events were queued) is refused:
// it can never be delivered.
func (r *router) Send(ctx context.Context, a channel.Attempt) channel.Outcome {
	if r.endpoint(a.Stream) {
		return r.eps.Send(ctx, a)
	}
	ch, ok := r.streams[a.Stream]
	if !ok {
		return channel.Outcome{Result: machine.OutcomeRefused, Detail: "the config declares no stream " + a.Stream}
	}
	return ch.Send(ctx, a)
}

// Probe asks the stream's channel.
func (r *router) Probe(ctx context.Context, stream string) channel.Outcome {
	if r.endpoint(stream) {
		return r.eps.Probe(ctx, stream)
	}
	ch, ok := r.streams[stream]
	if !ok {
		return channel.Outcome{Result: machine.OutcomeFailed, Detail: "the config declares no stream " + stream}
	}
	return ch.Probe(ctx, stream)
}
