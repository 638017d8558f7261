package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one running `courier serve`.
type process struct {
	cmd  *exec.Cmd
	base string        // the API's URL
	log  string        // the file of its stdout and stderr
	done chan struct{} // closed once it has exited
}

// startServe writes a config to dir and starts the courier binary with
// it, and returns once /healthz answers 200 (see the package comment for
// why not /readyz).
func startServe(ctx context.Context, o options, courier, dir, store, recvURL string) (*process, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "listen = %q\napi_tokens = [%q]\nallow_loopback = true\n%s", addr, token, store)
	if o.workers > 0 {
		fmt.Fprintf(&cfg, "workers = %d\n", o.workers)
	}
	for i := range o.streams {
		fmt.Fprintf(&cfg, "\n[streams.s%02d]\nurl = %q\nsecrets = [%q]\n", i, recvURL, secret)
		if o.window > 0 {
			fmt.Fprintf(&cfg, "ordering = \"independent\"\nwindow = %d\n", o.window)
		}
	}
	config := filepath.Join(dir, "courier.toml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	p := &process{base: "http://" + addr, log: filepath.Join(dir, "serve.log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	p.cmd = exec.Command(courier, "serve", "-config", config)
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, logf, logf
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	if err := p.waitHealthy(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// waitHealthy returns once /healthz answers 200, or an error with the end
// of the log if the process exits or ctx ends first.
func (p *process) waitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp, err := client.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("courier serve exited: %s", p.tail())
		case <-ctx.Done():
			return fmt.Errorf("courier serve never became ready: %s", p.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM, waits for the process to exit (killing it after a
// minute) and returns the CPU time it used (user and system), start-up
// and shutdown included. It may be called again.
func (p *process) stop() time.Duration {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

// tail is the end of the process's log, for an error.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	return string(b[max(0, len(b)-2000):])
}
