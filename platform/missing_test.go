// This file proves Service.ReplayMissing on the memory stores: an
// endpoint created after messages were published gets one delivery of
// each message since T that its filter takes, over more than one page,
// through the fan-out's own path (delivery ID message.endpoint, on its
// stream); asking again adds and enqueues nothing; an enqueue that fails
// leaves its entry pending for the re-drive, which finishes it once.
package platform_test

import (
	"errors"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
)

func TestReplayMissingGivesALateEndpointOlderMessagesOnce(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	early := w.endpoint(t, a.ID, true)
	var before []platform.Message
	for i := range 10 {
		m, _, err := w.svc.Publish(t.Context(), a.ID, "old", "", []byte{'b', byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, m)
	}
	time.Sleep(2 * time.Millisecond)
	since := time.Now()
	var chosen []platform.Message
	for i := range 130 { // more than one page of missingPage (100)
		typ := "paid"
		if i%10 == 9 {
			typ = "other"
		}
		m, _, err := w.svc.Publish(t.Context(), a.ID, typ, "", []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		if typ == "paid" {
			chosen = append(chosen, m)
		}
	}
	late := w.endpoint(t, a.ID, true, "paid")
	calls := w.calls
	added, pending, err := w.svc.ReplayMissing(t.Context(), a.ID, late.ID, since)
	if err != nil || added != len(chosen) || pending != 0 {
		t.Fatalf("ReplayMissing = %d added, %d pending, %v; want %d, 0, nil", added, pending, err, len(chosen))
	}
	if got := w.calls - calls; got != len(chosen) {
		t.Errorf("%d enqueues; want one per chosen message, %d", got, len(chosen))
	}
	for _, m := range chosen {
		rec, err := w.ds.Get(t.Context(), platform.DeliveryID(m.ID, late.ID))
		if err != nil || rec.Stream != platform.StreamOf(late.ID) || string(rec.Payload) != string(m.Payload) {
			t.Errorf("delivery of %s to the late endpoint: %+v, %v", m.ID, rec, err)
		}
		if got, _ := w.ps.GetMessage(t.Context(), a.ID, m.ID); len(got.Fanout) != 2 || !got.Complete() {
			t.Errorf("message %s after the replay: %+v; want two entries, complete", m.ID, got.Fanout)
		}
	}
	for _, m := range before {
		if got, _ := w.ps.GetMessage(t.Context(), a.ID, m.ID); len(got.Fanout) != 1 || got.Fanout[0].EndpointID != early.ID {
			t.Errorf("message %s from before since: %+v; want its entry for the early endpoint only", m.ID, got.Fanout)
		}
	}
	calls = w.calls
	added, pending, err = w.svc.ReplayMissing(t.Context(), a.ID, late.ID, since)
	if err != nil || added != 0 || pending != 0 || w.calls != calls {
		t.Errorf("ReplayMissing again = %d added, %d pending, %v, %d enqueues; want nothing", added, pending, err, w.calls-calls)
	}
}

func TestReplayMissingLeavesAFailedEnqueueToTheRedrive(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	m, _, err := w.svc.Publish(t.Context(), a.ID, "t", "", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	late := w.endpoint(t, a.ID, true)
	w.fail(late.ID, errors.New("the delivery store is down"))
	added, pending, err := w.svc.ReplayMissing(t.Context(), a.ID, late.ID, m.CreatedAt)
	if err != nil || added != 1 || pending != 1 {
		t.Fatalf("ReplayMissing with the enqueue failing = %d added, %d pending, %v; want 1, 1, nil", added, pending, err)
	}
	w.fail(late.ID, nil)
	if n, err := w.svc.Redrive(t.Context()); n != 1 || err != nil {
		t.Fatalf("Redrive = %d, %v; want 1, nil", n, err)
	}
	got, _ := w.ps.GetMessage(t.Context(), a.ID, m.ID)
	if n := w.delivered(t, got); n != 1 || !got.Complete() || len(got.Fanout) != 1 {
		t.Errorf("after the re-drive: %d delivered, fan-out %+v; want the late endpoint's delivery, complete", n, got.Fanout)
	}
	_, _, err = w.svc.ReplayMissing(t.Context(), a.ID, platform.NewID(platform.EndpointKind, time.Now()), m.CreatedAt)
	if !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("ReplayMissing of an unknown endpoint: %v; want ErrNotFound", err)
	}
	_, _, err = w.svc.ReplayMissing(t.Context(), a.ID, late.ID, time.Time{})
	var fe *platform.FieldError
	if !errors.As(err, &fe) || fe.Field != "since" {
		t.Errorf("ReplayMissing with no instant: %v; want a FieldError naming since", err)
	}
}
