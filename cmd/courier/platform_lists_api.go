package main

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/courierlab/courier/platform"
)

// Listing for operators: an application's messages, filtered and paged
// with a cursor, and an endpoint's deliveries by state.

// messagesPage is GET .../messages' answer; NextCursor is the cursor of
// the next page, set when this one is full.
type messagesPage struct {
	Data       []messageView `json:"data"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// listMessages lists an application's messages, newest first:
// ?event_type=&before=&after=&limit=&cursor= (before and after are RFC
// 3339 instants bounding created_at, each exclusive; cursor is the
// previous page's next_cursor). A message shows its fan-out, not each
// delivery's record (GET .../messages/{message} does).
func (a *api) listMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := platform.MessageFilter{EventType: q.Get("event_type")}
	var ok bool
	if f.CreatedBefore, ok = queryTime(w, r, "before"); !ok {
		return
	}
	if f.CreatedAfter, ok = queryTime(w, r, "after"); !ok {
		return
	}
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	cursor := q.Get("cursor")
	if cursor != "" {
		if err := platform.CheckID("cursor", platform.MessageKind, cursor); err != nil {
			writePlatErr(w, "listing messages", err)
			return
		}
	}
	list, err := a.plat.Store().ListMessages(r.Context(), r.PathValue("app"), f, cursor, limit)
	if err != nil {
		writePlatErr(w, "listing messages", err)
		return
	}
	p := messagesPage{Data: make([]messageView, 0, len(list))}
	for _, m := range list {
		p.Data = append(p.Data, messageOf(m))
	}
	if len(list) == limit {
		p.NextCursor = list[len(list)-1].ID
	}
	writeJSON(w, http.StatusOK, p)
}

// queryTime reads the RFC 3339 instant of query parameter name, zero if
// absent. It writes the error answer itself.
func queryTime(w http.ResponseWriter, r *http.Request, name string) (time.Time, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		writeField(w, name, "%q is not an RFC 3339 time (2006-01-02T15:04:05Z)", clipText(s))
		return time.Time{}, false
	}
	return t, true
}

// queryLimit reads ?limit= (default 100, at most platform.MaxLimit). It
// writes the error answer itself.
func queryLimit(w http.ResponseWriter, r *http.Request) (int, bool) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 100, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > platform.MaxLimit {
		writeField(w, "limit", "%q must be a number from 1 to %d", clipText(s), platform.MaxLimit)
		return 0, false
	}
	return n, true
}

// deliveriesPage is GET .../deliveries' answer; NextAfter is the after
// of the next page (a sequence number), set when this one is full.
type deliveriesPage struct {
	Data      []eventView `json:"data"`
	NextAfter uint64      `json:"next_after,omitempty"`
}

// listDeliveries lists an endpoint's deliveries in a state, in its
// stream's order: ?state=dead&after=SEQ&limit=N. Only dead can be
// listed: the delivery store lists a stream's records by state for its
// dead letters alone (store.DeadLetters); a delivery in any other state
// is read by its ID (GET /v1/events/{id}) or through its message.
func (a *api) listDeliveries(w http.ResponseWriter, r *http.Request) {
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	switch st := r.URL.Query().Get("state"); st {
	case "dead":
	case "":
		writeField(w, "state", "is missing; the one state listed is dead")
		return
	default:
		writeField(w, "state", "%q cannot be listed; the one state listed is dead (read another delivery by its message)", clipText(st))
		return
	}
	var after uint64
	if s := r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n > math.MaxInt64 {
			writeField(w, "after", "%q must be a sequence number from 0 to %d", clipText(s), int64(math.MaxInt64))
			return
		}
		after = n
	}
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	recs, err := a.st.DeadLetters(r.Context(), platform.StreamOf(e.ID), after, limit)
	if err != nil {
		writeStoreErr(w, "listing the endpoint's dead letters", err)
		return
	}
	p := deliveriesPage{Data: make([]eventView, 0, len(recs))}
	for _, rec := range recs {
		p.Data = append(p.Data, view(rec, false))
	}
	if len(recs) == limit {
		p.NextAfter = recs[len(recs)-1].Seq
	}
	writeJSON(w, http.StatusOK, p)
}
