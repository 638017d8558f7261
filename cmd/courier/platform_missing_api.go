package main

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// missingView answers a replay of an endpoint's missing messages.
type missingView struct {
	EndpointID string    `json:"endpoint_id"`
	Since      time.Time `json:"since"`
	// Added counts the deliveries added, one per message the endpoint had
	// none of; Pending those of them not yet in the delivery store (the
	// re-drive enqueues them within redrive_every).
	Added   int `json:"added"`
	Pending int `json:"pending"`
}

// replayMissing gives the endpoint a delivery of every message of its
// application since the body's instant that its filter takes and that it
// has none of (it was created, or subscribed, later): 200 with how many
// were added. A second call adds nothing.
func (a *api) replayMissing(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Since *string `json:"since"`
	}
	if !a.decode(w, r, &in) {
		return
	}
	e, ok := a.endpointOf(w, r) // first: another application's endpoint is 404 whatever the body
	if !ok {
		return
	}
	if in.Since == nil {
		writeField(w, "since", "is missing; give the RFC 3339 instant from which messages are replayed")
		return
	}
	since, ok := parseSince(w, *in.Since)
	if !ok {
		return
	}
	added, pending, err := a.plat.ReplayMissing(r.Context(), e.AppID, e.ID, since)
	if err != nil {
		// Pages added before the failure stay (each is durable and fanned
		// out); asking again adds the rest and nothing twice.
		writePlatErr(w, "replaying missing messages ("+strconv.Itoa(added)+" added; asking again adds the rest)", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "missing messages replayed", slog.String("app", e.AppID),
		slog.String("endpoint", e.ID), slog.Time("since", since), slog.Int("added", added), slog.Int("pending", pending))
	writeJSON(w, http.StatusOK, missingView{EndpointID: e.ID, Since: since.UTC(), Added: added, Pending: pending})
}

// parseSince reads a body's "since", an RFC 3339 instant not in the
// future (a bulk replay's and a replay of missing messages'). It writes
// the error answer itself.
func parseSince(w http.ResponseWriter, s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	switch {
	case err != nil:
		writeField(w, "since", "%q is not an RFC 3339 time (2006-01-02T15:04:05Z)", clipText(s))
		return time.Time{}, false
	case t.After(time.Now()):
		writeField(w, "since", "%s is in the future", t.Format(time.RFC3339Nano))
		return time.Time{}, false
	}
	return t, true
}
