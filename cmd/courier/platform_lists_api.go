package main

import (
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store"
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
// ?event_type=&endpoint_id=&before=&after=&limit=&cursor= (before and after are RFC
// 3339 instants bounding created_at, each exclusive; cursor is the
// previous page's next_cursor). A message shows its fan-out, not each
// delivery's record (GET .../messages/{message} does).
func (a *api) listMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := platform.MessageFilter{EventType: q.Get("event_type"), EndpointID: q.Get("endpoint_id")}
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

// deliveriesPage is GET .../deliveries' answer: NextAfter (a sequence
// number) pages the dead, NextCursor (a message ID) the other states.
type deliveriesPage struct {
	Data       []eventView `json:"data"`
	NextAfter  uint64      `json:"next_after,omitempty"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// listDeliveries lists an endpoint's deliveries in a state:
// ?state=dead&after=SEQ&limit=N lists its stream's dead letters in
// stream order (store.DeadLetters, the one listing by state the delivery
// store has); ?state=pending|retry|parked|delivered&cursor=&limit=N reads
// the deliveries of the endpoint's next limit messages, newest first,
// and keeps those in the state, so a page may be short, even empty,
// with a next_cursor to follow.
func (a *api) listDeliveries(w http.ResponseWriter, r *http.Request) {
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	switch st := q.Get("state"); {
	case st == "dead" && q.Has("cursor"):
		writeField(w, "cursor", "pages the states other than dead; dead pages by after (a sequence number)")
	case st == "dead":
		a.listDead(w, r, e)
	case st == "":
		writeField(w, "state", "is missing: pending, retry, parked, delivered or dead")
	case !slices.Contains([]string{"pending", "retry", "parked", "delivered"}, st):
		writeField(w, "state", "%q is none of pending, retry, parked, delivered, dead", clipText(st))
	case q.Has("after"):
		writeField(w, "after", "pages the dead only; state %s pages by cursor (a message ID)", st)
	default:
		a.listInState(w, r, e, st)
	}
}

// listDead answers the endpoint's dead letters.
func (a *api) listDead(w http.ResponseWriter, r *http.Request, e platform.Endpoint) {
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

// listInState answers the deliveries in state st among the endpoint's
// next limit messages after the cursor. A delivery not yet enqueued, or
// deleted by retention, is in no state the store can tell.
func (a *api) listInState(w http.ResponseWriter, r *http.Request, e platform.Endpoint, st string) {
	cursor := r.URL.Query().Get("cursor")
	limit, ok := queryLimit(w, r)
	if !ok {
		return
	}
	if cursor != "" {
		if err := platform.CheckID("cursor", platform.MessageKind, cursor); err != nil {
			writePlatErr(w, "listing deliveries", err)
			return
		}
	}
	msgs, err := a.plat.Store().ListMessages(r.Context(), e.AppID, platform.MessageFilter{EndpointID: e.ID}, cursor, limit)
	if err != nil {
		writePlatErr(w, "listing the endpoint's messages", err)
		return
	}
	p := deliveriesPage{Data: []eventView{}}
	for _, m := range msgs {
		i := slices.IndexFunc(m.Fanout, func(f platform.Fanout) bool { return f.EndpointID == e.ID })
		if i < 0 || m.Fanout[i].State != platform.Enqueued {
			continue
		}
		rec, err := a.st.Get(r.Context(), m.Fanout[i].DeliveryID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			writeStoreErr(w, "reading a delivery", err)
			return
		case rec.State.String() == st:
			p.Data = append(p.Data, view(rec, false))
		}
	}
	if len(msgs) == limit {
		p.NextCursor = msgs[len(msgs)-1].ID
	}
	writeJSON(w, http.StatusOK, p)
}
