package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
)

const usage = `courier delivers events to webhooks, once, whatever fails.

Usage:
  courier serve [-config FILE] [-listen ADDR] [-db FILE] [-postgres DSN]
  courier demo [-events N] [-seed S]
  courier receive [-listen ADDR] -secret whsec_... [-refuse TEXT]

Run "courier serve -h" for the flags.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, for tests: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stderr)
	case "demo":
		err = demo(ctx, args[1:], stdout, stderr)
	case "receive":
		err = receive(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "courier: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "courier:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "courier:", err)
		return 1
	}
}

// usageError is a bad command line or config: exit code 2.
type usageError struct{ error }

// newLogger writes text to a terminal and JSON otherwise.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	if format == "auto" || format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, usageError{fmt.Errorf("-log-format %q: want auto, text or json", format)}
}
