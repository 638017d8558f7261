package courier

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

// delivering answers every attempt and probe: delivered.
type delivering struct{}

func (delivering) Send(context.Context, channel.Attempt) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (delivering) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

// TestPublishTellsTheHolder: a publish is handed to the shard holding
// its stream, even one whose grant the Service has yet to observe; to no
// shard when another process's worker holds it (a claim here could not
// take it: that worker adopts the event at its poll); and, when no one
// does, to the first shard with room, which claims at once (the shards
// take turns once all are full).
func TestPublishTellsTheHolder(t *testing.T) {
	svc, err := New(Config{
		Worker: worker.Config{
			Owner: "here", Store: memstore.New(time.Now), MaxStreams: 6, LeaseTTL: time.Minute, Poll: time.Second,
			Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
		},
		Workers: 3,
		Channel: delivering{},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	told := func() (kicked []int) {
		for k, sh := range svc.shards {
			select {
			case <-sh.kick:
				kicked = append(kicked, k)
				sh.handed, sh.notify = nil, map[string]struct{}{}
			default:
				if len(sh.handed) > 0 || len(sh.notify) > 0 {
					t.Fatalf("shard %d was handed a publish without a kick", k)
				}
			}
		}
		return kicked
	}
	rec := func(stream string) store.Record {
		return store.Record{Event: store.Event{Stream: stream, ID: stream + "1", Seq: 1}}
	}
	// Each shard has room for 2 streams (MaxStreams 6 over 3 workers).
	grant := func(k int, stream string) {
		shardObserver{s: svc, k: k}.Observe(worker.Event{Kind: worker.LeaseGranted, Stream: stream})
	}
	release := func(k int, stream string) {
		shardObserver{s: svc, k: k}.Observe(worker.Event{Kind: worker.LeaseReleased, Stream: stream})
	}
	for _, c := range []struct {
		name, heldBy string
		before       func()
		want         []int
	}{
		{"held by shard 2, not yet observed", "here/3", nil, []int{2}},
		{"held by another process", "elsewhere/1", nil, nil},
		{"held by no one: the first shard with room", "", nil, []int{0}},
		{"held by no one, shard 0 holding one", "", func() { grant(0, "a") }, []int{0}},
		{"held by no one, shard 0 full", "", func() { grant(0, "b") }, []int{1}},
		{"held by no one, shard 0 full, b regranted to shard 1", "", func() { grant(1, "b") }, []int{0}},
		{"held by no one, shards 0 and 1 full", "", func() { grant(0, "c"); grant(1, "d") }, []int{2}},
		{"held by no one, every shard full: in turn", "", func() { grant(2, "e"); grant(2, "f") }, []int{0}},
		{"every shard full again: the next in turn", "", nil, []int{1}},
		{"held by no one, shard 1 released one", "", func() { release(1, "d") }, []int{1}},
	} {
		if c.before != nil {
			c.before()
		}
		svc.notify(rec("s"), true, c.heldBy)
		if got := told(); !slices.Equal(got, c.want) {
			t.Errorf("%s: shards told %v; want %v", c.name, got, c.want)
		}
	}
	svc.owners["s"] = 1 // shard 1 observed its grant
	svc.notify(rec("s"), true, "elsewhere/1")
	if got := told(); !slices.Equal(got, []int{1}) {
		t.Errorf("a stream a shard holds, as it observed: shards told %v; want [1]", got)
	}
}
