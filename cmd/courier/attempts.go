package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// The attempt log and the endpoints' health, in serve: each HTTP attempt
// to an endpoint is handed to a platform.Recorder, which writes it off
// the delivery path and disables an endpoint whose health says so; the
// operator is told by a log line (the Recorder's), a metric and, if
// configured, a signed webhook.

// attemptOf is what the attempt log keeps of attempt a to endpoint ep:
// the outcome and the receiver's answer (clipped), never the payload.
// ok is false for a delivery that is no message's (an event published to
// an endpoint's stream by hand): no message to list it under.
func attemptOf(ep platform.Endpoint, a channel.Attempt, start time.Time, took time.Duration, out channel.Outcome,
	resp httpchannel.Response) (platform.Attempt, bool) {
	msg, _, _ := strings.Cut(a.ID, ".")
	if !platform.IsID(platform.MessageKind, msg) || platform.DeliveryID(msg, ep.ID) != a.ID {
		return platform.Attempt{}, false
	}
	headers, body := platform.ClipResponse(resp.Header, resp.Body)
	return platform.Attempt{ID: platform.NewID(platform.AttemptKind, start), AppID: ep.AppID, MessageID: msg, EndpointID: ep.ID,
		DeliveryID: a.ID, Attempt: a.Attempt, At: start, Duration: took, Status: out.Status, Outcome: out.Result.String(),
		Detail: out.Detail, ResponseHeaders: headers, ResponseBody: body}, true
}

// newRecorder builds the attempt log's recorder from the [platform]
// config, with its metrics on mp: courier.platform.attempts.dropped
// (attempts the full queue dropped) and
// courier.platform.endpoints.disabled{reason}. closeFn releases the
// operator webhook's connections, once the recorder's Run has returned.
func newRecorder(c *Config, ps platform.Store, mp metric.MeterProvider, log *slog.Logger) (rec *platform.Recorder, closeFn func(), err error) {
	m := mp.Meter(instrumentation)
	dropped, err := m.Int64Counter("courier.platform.attempts.dropped", metric.WithUnit("{attempt}"),
		metric.WithDescription("HTTP attempts to endpoints left out of the attempt log because its queue was full."))
	if err != nil {
		return nil, nil, err
	}
	disabled, err := m.Int64Counter("courier.platform.endpoints.disabled", metric.WithUnit("{endpoint}"),
		metric.WithDescription("Endpoints disabled by their health, by reason: gone (HTTP 410) or failing (no success for disable_after)."))
	if err != nil {
		return nil, nil, err
	}
	notify, closeFn, err := operatorNotifier(c, log)
	if err != nil {
		return nil, nil, err
	}
	rec, err = platform.NewRecorder(platform.RecorderConfig{
		Store:        ps,
		DisableAfter: c.Platform.DisableAfter.Duration,
		Retention:    c.Platform.AttemptRetention.Duration,
		Logger:       log,
		OnDropped:    func() { dropped.Add(context.Background(), 1) },
		OnDisabled: func(ctx context.Context, e platform.Endpoint, reason string) {
			disabled.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
			notify(ctx, e, reason)
		},
	})
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return rec, closeFn, nil
}

// operatorEvent is the body of the operator webhook, in Standard
// Webhooks' shape (type, timestamp, data).
type operatorEvent struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      struct {
		AppID      string    `json:"app_id"`
		EndpointID string    `json:"endpoint_id"`
		Reason     string    `json:"reason"`
		DisabledAt time.Time `json:"disabled_at"`
	} `json:"data"`
}

// operatorNotifier returns what tells the operator webhook
// (platform.operator_webhook) that an endpoint was disabled: one signed
// POST through an HTTP channel (the SSRF policy and signing of every
// other send), not retried; a failure is logged. With no webhook
// configured it does nothing. closeFn releases its idle connections.
func operatorNotifier(c *Config, log *slog.Logger) (notify func(context.Context, platform.Endpoint, string), closeFn func(), err error) {
	if c.Platform.OperatorWebhook == "" {
		return func(context.Context, platform.Endpoint, string) {}, func() {}, nil
	}
	hc := httpchannel.Config{Endpoint: c.Platform.OperatorWebhook, Secrets: []string{c.Platform.OperatorSecret},
		Logger: slog.New(slog.DiscardHandler)}
	if c.AllowLoopback {
		hc.AllowAddrs = loopback
	}
	ch, err := httpchannel.New(hc)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("config: platform.operator_webhook: %w", err)}
	}
	notify = func(ctx context.Context, e platform.Endpoint, reason string) {
		var ev operatorEvent
		ev.Type, ev.Timestamp = "endpoint.disabled", time.Now().UTC()
		ev.Data.AppID, ev.Data.EndpointID, ev.Data.Reason, ev.Data.DisabledAt = e.AppID, e.ID, reason, e.UpdatedAt
		body, _ := json.Marshal(ev) // plain strings and times always marshal
		id := fmt.Sprintf("endpoint-disabled.%s.%d", e.ID, e.UpdatedAt.UnixMicro())
		out := ch.Send(ctx, channel.Attempt{ID: id, Attempt: 1, Payload: body})
		if out.Result != machine.OutcomeDelivered {
			log.LogAttrs(ctx, slog.LevelWarn, "operator webhook: not delivered", slog.String("endpoint", e.ID),
				slog.String("outcome", out.Result.String()), slog.String("detail", out.Detail))
		}
	}
	return notify, ch.Close, nil
}

// attemptView is what the API shows of one attempt. The response body
// is the receiver's, as text (invalid UTF-8 replaced).
type attemptView struct {
	ID              string              `json:"id"`
	AppID           string              `json:"app_id"`
	MessageID       string              `json:"message_id"`
	EndpointID      string              `json:"endpoint_id"`
	DeliveryID      string              `json:"delivery_id"`
	Attempt         int                 `json:"attempt"`
	At              time.Time           `json:"at"`
	DurationMs      float64             `json:"duration_ms"`
	Status          int                 `json:"status"`
	Outcome         string              `json:"outcome"`
	Detail          string              `json:"detail,omitempty"`
	ResponseHeaders map[string][]string `json:"response_headers"`
	ResponseBody    string              `json:"response_body"`
}

func viewAttempt(x platform.Attempt) attemptView {
	return attemptView{ID: x.ID, AppID: x.AppID, MessageID: x.MessageID, EndpointID: x.EndpointID, DeliveryID: x.DeliveryID,
		Attempt: x.Attempt, At: x.At, DurationMs: float64(x.Duration.Microseconds()) / 1000, Status: x.Status,
		Outcome: x.Outcome, Detail: x.Detail, ResponseHeaders: x.ResponseHeaders, ResponseBody: string(x.ResponseBody)}
}

func attemptID(x platform.Attempt) string { return x.ID }

// listMessageAttempts lists a message's attempts, newest first.
func (a *api) listMessageAttempts(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := page(w, r)
	if !ok {
		return
	}
	list, err := a.plat.Store().ListMessageAttempts(r.Context(), r.PathValue("app"), r.PathValue("message"), after, limit)
	if err != nil {
		writePlatErr(w, "listing the message's attempts", err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(list, limit, viewAttempt, attemptID))
}

// listEndpointAttempts lists an endpoint's attempts, newest first.
func (a *api) listEndpointAttempts(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := page(w, r)
	if !ok {
		return
	}
	list, err := a.plat.Store().ListEndpointAttempts(r.Context(), r.PathValue("app"), r.PathValue("endpoint"), after, limit)
	if err != nil {
		writePlatErr(w, "listing the endpoint's attempts", err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(list, limit, viewAttempt, attemptID))
}

// healthView is an endpoint's health; a time never reached is absent.
type healthView struct {
	EndpointID     string     `json:"endpoint_id"`
	AppID          string     `json:"app_id"`
	Enabled        bool       `json:"enabled"`
	LastAttemptAt  *time.Time `json:"last_attempt_at,omitempty"`
	LastSuccessAt  *time.Time `json:"last_success_at,omitempty"`
	FailingSince   *time.Time `json:"failing_since,omitempty"`
	FailingStreak  int64      `json:"failing_streak"`
	Successes      int64      `json:"successes"`
	Failures       int64      `json:"failures"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
}

func orNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// endpointHealth answers the endpoint's health with whether it is
// enabled now.
func (a *api) endpointHealth(w http.ResponseWriter, r *http.Request) {
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	h, err := a.plat.Store().GetHealth(r.Context(), e.AppID, e.ID)
	if err != nil {
		writePlatErr(w, "reading the endpoint's health", err)
		return
	}
	writeJSON(w, http.StatusOK, healthView{EndpointID: e.ID, AppID: e.AppID, Enabled: e.Enabled,
		LastAttemptAt: orNil(h.LastAttempt), LastSuccessAt: orNil(h.LastSuccess), FailingSince: orNil(h.FailingSince),
		FailingStreak: h.Streak, Successes: h.Successes, Failures: h.Failures, DisabledReason: h.DisabledReason,
		DisabledAt: orNil(h.DisabledAt)})
}
