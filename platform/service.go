package platform

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/courierlab/courier/internal/plant"
)

// Enqueuer puts one delivery in the delivery store: stream is the
// endpoint's (StreamOf), id the delivery's (DeliveryID). It must be
// idempotent by id: an id it holds already is a success that changes
// nothing. An error wrapping ErrRefused says the delivery can never be
// enqueued (the entry becomes Refused); any other error is transient.
type Enqueuer func(ctx context.Context, stream, id string, payload []byte) error

// ErrRefused is for an Enqueuer to wrap when a delivery can never be
// enqueued.
var ErrRefused = errors.New("platform: delivery refused")

// Config configures a Service.
type Config struct {
	Store   Store
	Enqueue Enqueuer
	// MaxPayloadBytes bounds a message's payload; Publish refuses a
	// larger one. It must be at most what every endpoint's channel takes.
	MaxPayloadBytes int
	// RedriveEvery is how often Run re-drives unfinished fan-outs; 0
	// means 10s.
	RedriveEvery time.Duration
	// Now is the clock for new IDs; nil means time.Now.
	Now func() time.Time
	// NewID makes the ID of each new message; nil means NewID. A
	// simulation gives its own, so that one seed decides every ID.
	NewID func(kind string, t time.Time) string
	// Logger receives the re-drive's failures; nil means slog.Default().
	Logger *slog.Logger
}

// Service publishes messages to applications and keeps their fan-out
// going: Publish, then Redrive (from Run) for what a crash or a failure
// left pending. See the package doc, "Fan-out and crashes".
type Service struct {
	cfg Config
}

// New checks cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("platform: Config.Store is nil")
	case cfg.Enqueue == nil:
		return nil, errors.New("platform: Config.Enqueue is nil")
	case cfg.MaxPayloadBytes < 1:
		return nil, fmt.Errorf("platform: Config.MaxPayloadBytes is %d; must be positive", cfg.MaxPayloadBytes)
	case cfg.RedriveEvery < 0:
		return nil, fmt.Errorf("platform: Config.RedriveEvery is %v; must not be negative", cfg.RedriveEvery)
	}
	if cfg.RedriveEvery == 0 {
		cfg.RedriveEvery = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NewID == nil {
		cfg.NewID = NewID
	}
	return &Service{cfg: cfg}, nil
}

// Store is the Service's store.
func (s *Service) Store() Store { return s.cfg.Store }

// Publish records a message of eventType to application app and fans it
// out: it returns once the message and its fan-out list are durable and
// each delivery has been tried once (see the package doc). created is
// false when key named a message already: if that message has the same
// event type and payload, byte for byte, it is returned (and its fan-out
// re-driven); otherwise the call fails with ErrConflict and changes
// nothing. Without a key every call is a new message, so a producer that
// retries after an error must give one.
//
// A nil error means the message is durable; m.Complete() says whether
// every delivery is enqueued already (if not, Run finishes them).
func (s *Service) Publish(ctx context.Context, app, eventType, key string, payload []byte) (m Message, created bool, err error) {
	if len(payload) > s.cfg.MaxPayloadBytes {
		return Message{}, false, fieldErr("payload", "is %d bytes; at most %d", len(payload), s.cfg.MaxPayloadBytes)
	}
	in := Message{ID: s.cfg.NewID(MessageKind, s.cfg.Now()), AppID: app, EventType: eventType, IdempotencyKey: key, Payload: payload}
	if err := CheckMessage(in); err != nil {
		if fe := (*FieldError)(nil); errors.As(err, &fe) && fe.Field == "app_id" {
			return Message{}, false, fmt.Errorf("%w: application %q", ErrNotFound, clip(app))
		}
		return Message{}, false, err
	}
	m, created, err = s.cfg.Store.CreateMessage(ctx, in)
	if err != nil {
		return Message{}, false, err
	}
	if !created && (m.EventType != eventType || !bytes.Equal(m.Payload, payload)) {
		return Message{}, false, fmt.Errorf("%w: idempotency_key %q names message %s, which has another event type or payload; it is unchanged",
			ErrConflict, key, m.ID)
	}
	m, err = s.drive(ctx, m)
	if err != nil {
		s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "fan-out unfinished; the re-drive will finish it",
			slog.String("message", m.ID), slog.Any("err", err))
	}
	return m, created, nil
}

// drive enqueues each pending delivery of m and marks it, and returns m
// with the entries it moved. It tries every entry, and returns the first
// error it met.
func (s *Service) drive(ctx context.Context, m Message) (Message, error) {
	var first error
	for i, f := range m.Fanout {
		if f.State != Pending {
			continue
		}
		state, detail := Enqueued, ""
		if plant.On(plant.FanoutMarksUnsent) {
			if err := s.markFirst(ctx, m, f); err != nil {
				first = cmp.Or(first, err)
				continue
			}
		}
		if err := s.cfg.Enqueue(ctx, f.Stream, f.DeliveryID, m.Payload); errors.Is(err, ErrRefused) {
			state, detail = Refused, err.Error()
		} else if err != nil {
			first = cmp.Or(first, fmt.Errorf("enqueueing %s: %w", f.DeliveryID, err))
			continue
		}
		if err := s.cfg.Store.SetFanout(ctx, m.ID, f.EndpointID, state, detail); err != nil {
			first = cmp.Or(first, fmt.Errorf("marking %s %v: %w", f.DeliveryID, state, err))
			continue
		}
		m.Fanout[i].State, m.Fanout[i].Detail = state, detail
	}
	return m, first
}

// markFirst is the planted FanoutMarksUnsent: it marks f enqueued before
// the enqueue, so a crash between the two loses the delivery.
func (s *Service) markFirst(ctx context.Context, m Message, f Fanout) error {
	if err := s.cfg.Store.SetFanout(ctx, m.ID, f.EndpointID, Enqueued, ""); err != nil {
		return fmt.Errorf("marking %s %v: %w", f.DeliveryID, Enqueued, err)
	}
	return nil
}

// redrivePage is how many unfinished messages Redrive reads at once.
const redrivePage = 100

// Redrive finishes the fan-out of every message with a pending delivery
// (Store.Unfinished), and returns how many messages it completed. It
// goes on past a message it cannot finish (an enqueue failing) and
// returns the first such error after the last page; a store failure to
// list stops it.
func (s *Service) Redrive(ctx context.Context) (int, error) {
	done, after := 0, ""
	var first error
	for {
		page, err := s.cfg.Store.Unfinished(ctx, after, redrivePage)
		if err != nil {
			return done, errors.Join(first, err)
		}
		for _, m := range page {
			m, err := s.drive(ctx, m)
			first = cmp.Or(first, err)
			if m.Complete() {
				done++
			}
		}
		if len(page) < redrivePage {
			return done, first
		}
		after = page[len(page)-1].ID
	}
}

// Run re-drives at once (what a crash left pending) and then every
// Config.RedriveEvery, until ctx ends; it returns nil then. Failures are
// logged and tried again at the next turn.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.RedriveEvery)
	defer t.Stop()
	for {
		n, err := s.Redrive(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "fan-out re-drive", slog.Int("completed", n), slog.Any("err", err))
		case n > 0:
			s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "fan-out re-driven", slog.Int("completed", n))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
