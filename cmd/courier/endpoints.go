package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// endpointChannels sends the streams of the platform's endpoints
// (platform.IsEndpointStream), each through an HTTP channel built from
// the endpoint as the platform store holds it at send time: an endpoint
// created, retargeted or given new secrets by the API is used at its next
// attempt, with no restart. A channel is kept per endpoint and rebuilt
// when the endpoint's UpdatedAt moves, or when an old secret of a
// rotation expires (platform.Endpoint.SigningSecrets).
type endpointChannels struct {
	plat          platform.Store
	allowLoopback bool
	log           *slog.Logger
	// rec, if not nil, receives every HTTP attempt for the attempt log.
	rec *platform.Recorder

	mu    sync.Mutex
	built map[string]builtChannel // endpoint ID -> its channel
}

// builtChannel is an endpoint's channel, built from the endpoint as of
// updated and signing with its secrets as of then until until (zero:
// for good), when an old secret expires and it is built again.
type builtChannel struct {
	updated time.Time
	until   time.Time
	ch      *httpchannel.Channel
}

// endpointPolicy is the delivery policy of an endpoint's stream:
// machine.DefaultConfig with the endpoint's ordering, attempts in flight,
// rate limit, retry policy and attempt timeout (platform.EndpointPolicy;
// the timeout bounds the HTTP attempt too). Its payload bound is the
// platform's (platform.Config.MaxPayloadBytes).
func endpointPolicy(ep platform.Endpoint) machine.Config {
	return platform.EndpointPolicy(basePolicy(), ep)
}

// basePolicy is machine.DefaultConfig with a fresh seed: what every
// endpoint's policy starts from.
func basePolicy() machine.Config {
	p := machine.DefaultConfig()
	p.Seed = randomSeed()
	return p
}

// defaultEndpointPolicy is the policy of a strict endpoint with no rate
// limit: the bounds every endpoint shares.
func defaultEndpointPolicy() machine.Config {
	return endpointPolicy(platform.Endpoint{Ordering: platform.Strict})
}

func newEndpointChannels(plat platform.Store, allowLoopback bool, log *slog.Logger) *endpointChannels {
	return &endpointChannels{plat: plat, allowLoopback: allowLoopback, log: log, built: map[string]builtChannel{}}
}

// Check refuses what no endpoint's channel could carry: an ID that is no
// webhook-id, a payload over the platform's bound.
func (e *endpointChannels) Check(_, id string, payload []byte) error {
	if err := webhook.CheckID(id); err != nil {
		return err
	}
	if max := defaultEndpointPolicy().MaxPayloadBytes; len(payload) > max {
		return fmt.Errorf("payload of %d bytes is over %d", len(payload), max)
	}
	return nil
}

// channel returns the channel of stream's endpoint as it is now, and the
// endpoint, or the outcome to answer instead: refused if the endpoint is
// gone (it can never be delivered: a dead letter, kept), failed if the
// store did not answer.
func (e *endpointChannels) channel(ctx context.Context, stream string) (*httpchannel.Channel, platform.Endpoint, channel.Outcome, bool) {
	ep, err := e.plat.GetEndpoint(ctx, stream)
	if errors.Is(err, platform.ErrNotFound) {
		return nil, ep, channel.Outcome{Result: machine.OutcomeRefused, Detail: "endpoint " + stream + " was deleted"}, false
	}
	if err != nil {
		return nil, ep, channel.Outcome{Result: machine.OutcomeFailed, Detail: channel.Truncate("reading the endpoint: " + err.Error())}, false
	}
	ch, out, ok := e.build(ep)
	return ch, ep, out, ok
}

// build returns ep's channel, built anew if ep changed since.
func (e *endpointChannels) build(ep platform.Endpoint) (*httpchannel.Channel, channel.Outcome, bool) {
	stream := platform.StreamOf(ep.ID)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	if b, ok := e.built[ep.ID]; ok && b.updated.Equal(ep.UpdatedAt) && (b.until.IsZero() || now.Before(b.until)) {
		return b.ch, channel.Outcome{}, true
	}
	secrets, until := ep.SigningSecrets(now)
	hc := httpchannel.Config{
		Endpoints:      map[string]string{stream: ep.URL},
		Secrets:        secrets,
		Headers:        ep.Headers,
		AttemptTimeout: endpointPolicy(ep).AttemptTimeout,
		MaxBodyBytes:   endpointPolicy(ep).MaxPayloadBytes,
		StatusPolicy:   platform.StatusPolicy(ep),     // what rejects at once; the rest is retried
		Logger:         slog.New(slog.DiscardHandler), // the loopback warning is logged once, at the start
	}
	if e.allowLoopback {
		hc.AllowAddrs = loopback
	}
	ch, err := httpchannel.New(hc)
	if err != nil {
		return nil, channel.Outcome{Result: machine.OutcomeRefused, Detail: channel.Truncate("endpoint " + stream + ": " + err.Error())}, false
	}
	if old, ok := e.built[ep.ID]; ok {
		old.ch.Close() // only its idle connections: an attempt in flight on it finishes
	}
	e.built[ep.ID] = builtChannel{updated: ep.UpdatedAt, until: until, ch: ch}
	return ch, channel.Outcome{}, true
}

// Send sends the attempt to the endpoint as it is now and, with an
// attempt log, hands the attempt and the answer to it (never waiting).
func (e *endpointChannels) Send(ctx context.Context, a channel.Attempt) channel.Outcome {
	ch, ep, out, ok := e.channel(ctx, a.Stream)
	if !ok {
		return out
	}
	if e.rec == nil {
		return ch.Send(ctx, a)
	}
	start := time.Now()
	out, resp := ch.SendResponse(ctx, a)
	if rec, ok := attemptOf(ep, a, start, time.Since(start), out, resp); ok {
		e.rec.Record(rec)
	}
	return out
}

func (e *endpointChannels) Probe(ctx context.Context, stream string) channel.Outcome {
	ch, _, out, ok := e.channel(ctx, stream)
	if !ok {
		if out.Result == machine.OutcomeRefused {
			out.Result = machine.OutcomeFailed // a probe only says healthy or not
		}
		return out
	}
	return ch.Probe(ctx, stream)
}

// Close releases the channels' idle connections.
func (e *endpointChannels) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range e.built {
		b.ch.Close()
	}
}

// policy is the endpoint's stream's delivery policy
// (platform.StreamPolicy, which the simulator's workers ask too):
// courier.ErrPaused while the endpoint is disabled (the worker gives the
// stream back; its deliveries wait), the default policy for an endpoint
// deleted (its deliveries are then refused at send and kept as dead
// letters).
func (e *endpointChannels) policy(stream string) (machine.Config, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := platform.StreamPolicy(ctx, e.plat, basePolicy(), stream)
	if errors.Is(err, platform.ErrDisabled) {
		return machine.Config{}, fmt.Errorf("%w: %w", courier.ErrPaused, err)
	}
	return p, err
}
