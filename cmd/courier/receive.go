package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/courierlab/courier/webhook/receiver"
)

// receive runs a development receiver built with the receiver kit: it
// verifies each webhook, applies each event ID once (in memory), prints
// what it applied, and refuses (422) bodies containing -refuse, so that
// a dead letter can be made on purpose (at once when the stream lists 422
// in reject_statuses; by default a 422 is retried).
func receive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("courier receive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9000", "address to listen on")
	secret := fs.String("secret", os.Getenv("COURIER_RECEIVE_SECRET"), "the stream's signing secret, whsec_... ($COURIER_RECEIVE_SECRET)")
	refuse := fs.String("refuse", "", "answer 422 to bodies containing this text (a dead letter at once if the stream's reject_statuses lists 422)")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, _ := receiver.FromContext(r.Context())
		if *refuse != "" && strings.Contains(string(ev.Body), *refuse) {
			fmt.Fprintf(stdout, "refused  %s (stream %s, seq %d, attempt %d)\n", ev.ID, ev.Stream, ev.Seq, ev.Attempt)
			http.Error(w, "refused", http.StatusUnprocessableEntity)
			return
		}
		fmt.Fprintf(stdout, "applied  %s (stream %s, seq %d, attempt %d): %s\n", ev.ID, ev.Stream, ev.Seq, ev.Attempt, ev.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	log := slog.New(slog.NewTextHandler(stderr, nil))
	h, err := receiver.New(receiver.Config{
		Secrets: []string{*secret},
		Window:  8 * 24 * time.Hour, // longer than the sender's max_age
		Store:   receiver.NewMemory(),
		Logger:  log, // refusals, never a body, signature or secret
	}, app)
	if err != nil {
		return usageError{err}
	}
	// Listen first, so that the address printed is the one bound (a
	// port of 0 picks a free one).
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("courier receive: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signalContext(ctx, log)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stderr, "courier receive: listening on %s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
