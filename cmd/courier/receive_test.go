// This file proves courier receive as a user runs it: the built binary
// listens on a free port, answers 204 to a correctly signed webhook and
// prints it as applied, answers 200 to the same ID again without applying
// it twice, 422 to a body it was told to refuse, and 401 to a webhook
// signed with another secret, which it never prints; its log lines
// (stderr) hold no payload, signature or secret; SIGTERM stops it with
// exit code 0.
package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/courierlab/courier/webhook"
)

// startReceive starts courier receive with secret in its environment
// (not on the command line, where ps shows it) and returns the process,
// its address and the paths of its stdout and stderr.
func startReceive(t *testing.T, bin, secret string, args ...string) (cmd *exec.Cmd, addr, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	stdout, stderr = filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	outF, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(bin, append([]string{"receive", "-listen", "127.0.0.1:0"}, args...)...)
	cmd.Stdout, cmd.Stderr = outF, errF
	cmd.Env = append(os.Environ(), "COURIER_RECEIVE_SECRET="+secret)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outF.Close()
	errF.Close()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", mustRead(t, stdout), mustRead(t, stderr))
		}
	})
	listening := regexp.MustCompile(`courier receive: listening on (127\.0\.0\.1:\d+)`)
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if m := listening.FindStringSubmatch(mustRead(t, stderr)); m != nil {
			return cmd, m[1], stdout, stderr
		}
	}
	t.Fatalf("courier receive did not say where it listens:\n%s", mustRead(t, stderr))
	return nil, "", "", ""
}

// postSigned posts body as event id (seq 1, attempt 1 on stream orders),
// signed with secret, and returns the status.
func postSigned(t *testing.T, addr, secret, id, body string) int {
	t.Helper()
	sec, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := webhook.NewSigner(sec)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", "http://"+addr+"/hooks/orders", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	signer.SetHeaders(req.Header, id, time.Now(), []byte(body))
	req.Header.Set(webhook.HeaderStream, "orders")
	req.Header.Set(webhook.HeaderSequence, "1")
	req.Header.Set(webhook.HeaderAttempt, "1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", id, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestProcessReceiveVerifiesAndStopsOnSIGTERM(t *testing.T) {
	bin := buildBinary(t)
	secret, forger := webhook.NewSecret(), webhook.NewSecret()
	cmd, addr, stdout, stderr := startReceive(t, bin, secret, "-refuse", "refuse-me")

	good := `{"total":42,"note":"payload-good-7f3a"}`
	refused := `{"total":1,"note":"refuse-me payload-refused-91c2"}`
	forged := `{"total":1000000,"note":"payload-forged-d4e8"}`
	for _, c := range []struct {
		name, secret, id, body string
		want                   int
	}{
		{"signed", secret, "order-1", good, http.StatusNoContent},
		{"same ID again", secret, "order-1", good, http.StatusOK},
		{"refused body", secret, "order-2", refused, http.StatusUnprocessableEntity},
		{"signed with another secret", forger, "order-3", forged, http.StatusUnauthorized},
	} {
		if got := postSigned(t, addr, c.secret, c.id, c.body); got != c.want {
			t.Errorf("%s: status %d, want %d", c.name, got, c.want)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v; want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10s after SIGTERM")
	}

	// What it printed: the applied and refused events, once each, and
	// nothing of the forged one.
	out := mustRead(t, stdout)
	wantOut := "applied  order-1 (stream orders, seq 1, attempt 1): " + good + "\n" +
		"refused  order-2 (stream orders, seq 1, attempt 1)\n"
	if out != wantOut {
		t.Errorf("stdout = %q, want %q", out, wantOut)
	}
	// Its log lines: the refusal of the forgery (by ID and status) and
	// the shutdown, and no payload, signature or secret.
	logs := mustRead(t, stderr)
	for _, want := range []string{"listening on " + addr, "status=401", "id=order-3", "signal: shutting down gracefully"} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr does not contain %q", want)
		}
	}
	forbidden := []string{secret, forger, strings.TrimPrefix(secret, "whsec_"), strings.TrimPrefix(forger, "whsec_"),
		"payload-good", "payload-refused", "payload-forged", "v1,", strconv.Itoa(1000000)}
	for _, f := range forbidden {
		if strings.Contains(logs, f) {
			t.Errorf("stderr contains %q; log lines must hold no payload, signature or secret", f)
		}
	}
	if strings.Contains(out, "payload-forged") || strings.Contains(out, secret) {
		t.Errorf("stdout shows the forged payload or the secret: %q", out)
	}
}
