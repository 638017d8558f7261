package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/courierlab/courier/webhook/receiver"
)

// benchReceiver is the receiver kit on loopback, verifying every
// signature; it applies each event ID once and closes done when all
// events were applied.
type benchReceiver struct {
	srv     *http.Server
	url     string
	applied atomic.Int64
	done    chan struct{}
}

func startReceiver(events int) (*benchReceiver, error) {
	r := &benchReceiver{done: make(chan struct{})}
	var once sync.Once
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if r.applied.Add(1) == int64(events) {
			once.Do(func() { close(r.done) })
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h, err := receiver.New(receiver.Config{Secrets: []string{secret}, Window: 24 * time.Hour, Store: receiver.NewMemory()}, app)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	r.url = "http://" + ln.Addr().String() + "/hooks"
	return r, nil
}

func (r *benchReceiver) close() { r.srv.Close() }

// publish sends every event through the APIs from o.producers clients,
// event i to stream i mod streams, producer j to process j mod K.
func publish(ctx context.Context, o options, procs []*process) error {
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.producers},
	}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	errs := make(chan error, o.producers)
	var wg sync.WaitGroup
	for j := range o.producers {
		base := procs[j%len(procs)].base
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < o.events; i = int(next.Add(1)) - 1 {
				if err := publishOne(ctx, client, base, i%o.streams, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when no producer failed
}

// publishOne publishes event i, trying again (with the same ID, so a
// retry is a duplicate) when the API is unreachable or answers 503.
func publishOne(ctx context.Context, client *http.Client, base string, stream, i int) error {
	body, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("ev-%d", i), "payload": map[string]int{"n": i}})
	url := fmt.Sprintf("%s/v1/streams/s%02d/events", base, stream)
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusCreated, http.StatusOK:
				return nil
			case http.StatusServiceUnavailable:
				err = fmt.Errorf("publish ev-%d: %s", i, msg)
			default:
				return fmt.Errorf("publish ev-%d: status %d: %s", i, resp.StatusCode, msg)
			}
		}
		if try == 10 || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
