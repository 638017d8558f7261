package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store"
)

type messageIn struct {
	EventType      *string         `json:"event_type"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotency_key"`
}

// messageView is a message with each of its deliveries: where the
// fan-out put it and, once enqueued, the delivery store's record.
type messageView struct {
	ID             string          `json:"id"`
	AppID          string          `json:"app_id"`
	EventType      string          `json:"event_type"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	FanoutComplete bool            `json:"fanout_complete"`
	Deliveries     []deliveryView  `json:"deliveries"`
}

type deliveryView struct {
	EndpointID string `json:"endpoint_id"`
	ID         string `json:"id"` // the event's ID in GET /v1/events/{id}, and the webhook-id
	Stream     string `json:"stream"`
	// Fanout is "pending" (not yet enqueued: the re-drive will), "enqueued"
	// or "refused" (never: Detail says why).
	Fanout string `json:"fanout"`
	Detail string `json:"detail,omitempty"`
	// Delivery is the delivery store's record of it, once enqueued: its
	// state, attempts, last outcome, dead reason.
	Delivery *eventView `json:"delivery,omitempty"`
}

// messageOf is m with its fan-out, without the delivery store's
// records.
func messageOf(m platform.Message) messageView {
	v := messageView{ID: m.ID, AppID: m.AppID, EventType: m.EventType, IdempotencyKey: m.IdempotencyKey,
		CreatedAt: m.CreatedAt, FanoutComplete: m.Complete(), Deliveries: []deliveryView{}}
	if json.Valid(m.Payload) {
		v.Payload = m.Payload
	}
	for _, f := range m.Fanout {
		v.Deliveries = append(v.Deliveries, deliveryView{EndpointID: f.EndpointID, ID: f.DeliveryID, Stream: f.Stream,
			Fanout: f.State.String(), Detail: f.Detail})
	}
	return v
}

// viewMessage reads each enqueued delivery's record from the delivery
// store.
func (a *api) viewMessage(r *http.Request, m platform.Message) (messageView, error) {
	v := messageOf(m)
	for i, f := range m.Fanout {
		if f.State != platform.Enqueued {
			continue
		}
		rec, err := a.st.Get(r.Context(), f.DeliveryID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			v.Deliveries[i].Detail = "settled and deleted by retention"
		case err != nil:
			return messageView{}, err
		default:
			ev := view(rec, false)
			v.Deliveries[i].Delivery = &ev
		}
	}
	return v, nil
}

// createMessage publishes a message to the application: 201 once it and
// every delivery are durable, 202 if it is durable but some delivery is
// still to be enqueued (the re-drive will), 200 for an idempotency key
// already used with the same event type and payload.
func (a *api) createMessage(w http.ResponseWriter, r *http.Request) {
	var in messageIn
	if !a.decode(w, r, &in) {
		return
	}
	switch {
	case in.EventType == nil:
		writeField(w, "event_type", "is missing")
		return
	case len(in.Payload) == 0:
		writeField(w, "payload", "is missing")
		return
	}
	m, created, err := a.plat.Publish(r.Context(), r.PathValue("app"), *in.EventType, in.IdempotencyKey, in.Payload)
	if err != nil {
		writePlatErr(w, "publishing the message", err)
		return
	}
	v, err := a.viewMessage(r, m)
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, "message %s is stored; reading its deliveries: %v", m.ID, err)
		return
	}
	status := http.StatusOK
	switch {
	case created && m.Complete():
		status = http.StatusCreated
	case created:
		status = http.StatusAccepted
	}
	writeJSON(w, status, v)
}

func (a *api) getMessage(w http.ResponseWriter, r *http.Request) {
	m, err := a.plat.Store().GetMessage(r.Context(), r.PathValue("app"), r.PathValue("message"))
	if err != nil {
		writePlatErr(w, "reading the message", err)
		return
	}
	v, err := a.viewMessage(r, m)
	if err != nil {
		writeStoreErr(w, "reading the message's deliveries", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
