// simrun serve hands out a page that runs the simulator in a real browser
// and shows the same trace hash as the CLI: the handler serves exactly the
// page, its script, the toolchain's wasm_exec.js and a freshly built
// js/wasm simulator (the wasm build check); and, where Debian's chromium
// is installed, a headless chromium loads the page from a `simrun serve`
// process, runs outage seed 1 in it, and reads the hash that
// `simrun run -scenario outage -seed 1` prints.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

func TestServeHandler(t *testing.T) {
	p, err := buildPage(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.handler())
	defer srv.Close()
	tests := []struct {
		method, path string
		wantStatus   int
		wantType     string
		wantPrefix   string // of the body
		wantContains string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", "<!DOCTYPE html>", `<script src="app.js">`},
		{"GET", "/app.js", 200, "text/javascript; charset=utf-8", "", "sim.wasm"},
		{"GET", "/style.css", 200, "text/css; charset=utf-8", "", "#timeline"},
		{"GET", "/wasm_exec.js", 200, "text/javascript; charset=utf-8", "", "globalThis.Go"},
		{"GET", "/sim.wasm", 200, "application/wasm", "\x00asm", ""},
		{"GET", "/index.html", 404, "", "", ""}, // the page is / only
		{"GET", "/serve.go", 404, "", "", ""},
		{"GET", "/page/app.js", 404, "", "", ""},
		{"POST", "/", 405, "", "", ""},
	}
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tt.wantStatus {
			t.Errorf("%s %s: status %d, want %d", tt.method, tt.path, resp.StatusCode, tt.wantStatus)
			continue
		}
		if got := resp.Header.Get("Content-Type"); tt.wantType != "" && got != tt.wantType {
			t.Errorf("%s %s: Content-Type %q, want %q", tt.method, tt.path, got, tt.wantType)
		}
		if !bytes.HasPrefix(body, []byte(tt.wantPrefix)) || !bytes.Contains(body, []byte(tt.wantContains)) {
			t.Errorf("%s %s: body (%d bytes) does not start with %q and contain %q", tt.method, tt.path, len(body), tt.wantPrefix, tt.wantContains)
		}
		if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("%s %s: Cache-Control %q, want no-cache", tt.method, tt.path, got)
		}
	}
}

func TestServeUsage(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"extra argument", []string{"serve", "now"}, `unexpected arguments ["now"]`},
		{"unknown flag", []string{"serve", "-port", "80"}, "flag provided but not defined: -port"},
		{"bad address", []string{"serve", "-addr", "nowhere"}, "-addr: listen tcp: address nowhere: missing port in address"},
		{"busy port", []string{"serve", "-addr", busy.Addr().String()}, "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit %d, want %d (usage)", code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

// chromium finds Debian's chromium, or skips (fails, under
// COURIER_REQUIRE_BROWSER=1, as .ci/browser runs it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	const msg = "no chromium on PATH: install it with `apt-get install -y chromium` (or run .ci/browser)"
	if os.Getenv("COURIER_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + "; COURIER_REQUIRE_BROWSER=1 makes this a failure")
	}
	t.Skip(msg)
	return ""
}

func TestBrowserRunsOutageWithTheCLIHash(t *testing.T) {
	browser := chromium(t)
	if testing.Short() {
		t.Skip("-short: the browser test builds simrun and the simulator and starts chromium")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	simrun := filepath.Join(dir, "simrun")
	goCommand(t, ctx, root, "build", "-o", simrun, "./cmd/simrun")

	cli, err := exec.CommandContext(ctx, simrun, "run", "-scenario", "outage", "-seed", "1").Output()
	if err != nil {
		t.Fatalf("simrun run -scenario outage -seed 1: %v\n%s", err, cli)
	}
	m := regexp.MustCompile(`(?m)^trace:\s+hash (\S+)$`).FindSubmatch(cli)
	if m == nil {
		t.Fatalf("simrun run printed no trace hash:\n%s", cli)
	}
	wantHash := string(m[1])
	accepted := regexp.MustCompile(`(?m)^events:\s+(\d+) accepted`).FindSubmatch(cli)
	if accepted == nil {
		t.Fatalf("simrun run printed no events line:\n%s", cli)
	}

	url := startServe(t, ctx, simrun, root, dir)

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1360, 900))
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()

	var mu sync.Mutex
	var thrown []string
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			text := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil {
				text += " " + x.Description
			}
			mu.Lock()
			thrown = append(thrown, text)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal("starting chromium:", err)
	}
	err = chromedp.Do(tab,
		chromedp.Navigate(url),
		chromedp.WaitEnabled(chromedp.ID("run")), // the simulator loaded and listed the scenarios
		chromedp.SetValue(chromedp.ID("scenario"), "outage"),
		chromedp.SetValue(chromedp.ID("seed"), "1"),
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.CSS(`#result[data-state=done] #hash`)),
	)
	if err != nil {
		t.Fatal("running outage seed 1 in the page:", err)
	}
	got := func(sel string) string {
		s, err := chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	if hash := got("#hash"); hash != wantHash {
		t.Errorf("the page shows trace hash %q; simrun run -scenario outage -seed 1 prints %q", hash, wantHash)
	}
	if title := got("#title"); title != "scenario outage, seed 1" {
		t.Errorf("the page ran %q, want scenario outage, seed 1", title)
	}
	held, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#invariants > li.held").length`))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(invariants.Names) + 1; held != want { // and the scenario's expectation
		t.Errorf("%d verdicts held in the page, want %d (every invariant and the expectation)", held, want)
	}
	lastLane := fmt.Sprintf("e%03s", accepted[1])
	if lanes := got("#timeline svg"); !strings.Contains(lanes, "e001") || !strings.Contains(lanes, lastLane) {
		t.Errorf("the timeline lacks the lanes e001 and %s", lastLane)
	}
	shot, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(os.TempDir(), "courier-page.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("outage seed 1: CLI hash %s; screenshot of the page: %s", wantHash, path)

	// A swarm seed too: the page draws the same world as a sweep does.
	const swarmSeed = 3
	native, _ := scenarios.RunSwarmSeed(swarmSeed, sim.Options{})
	err = chromedp.Do(tab,
		chromedp.Click(chromedp.CSS(`label:has(input[value=swarm])`)),
		chromedp.SetValue(chromedp.ID("seed"), fmt.Sprint(swarmSeed)),
		chromedp.Click(chromedp.ID("run")),
	)
	if err != nil {
		t.Fatal("running a swarm seed in the page:", err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](fmt.Sprintf(
		`document.querySelector("#result").dataset.state === "done" && document.querySelector("#title").textContent === "swarm seed %d"`, swarmSeed))); err != nil {
		t.Fatal("waiting for the swarm run:", err)
	}
	if hash := got("#hash"); hash != native.Hash {
		t.Errorf("the page shows trace hash %q for swarm seed %d; scenarios.RunSwarmSeed gives %q", hash, swarmSeed, native.Hash)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(thrown) > 0 {
		t.Errorf("the page threw: %s", strings.Join(thrown, "; "))
	}
}

// startServe starts `simrun serve` on a free loopback port, in root (it
// builds the simulator from there), with its cache in dir but Go's own
// build cache kept, and returns the URL it prints. The process is
// interrupted when the test ends.
func startServe(t *testing.T, ctx context.Context, simrun, root, dir string) string {
	gocache := strings.TrimSpace(goCommand(t, ctx, root, "env", "GOCACHE"))
	cmd := exec.CommandContext(ctx, simrun, "serve", "-addr", "127.0.0.1:0")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "GOCACHE="+gocache)
	serving := make(chan string, 1)
	cmd.Stdout = &testWriter{t: t, prefix: "serve: ", serving: serving}
	cmd.Stderr = &testWriter{t: t, prefix: "serve stderr: "}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		<-exited
	})
	select {
	case url := <-serving:
		return url
	case err := <-exited:
		t.Fatalf("simrun serve exited before it served: %v", err)
	case <-ctx.Done():
		t.Fatal("simrun serve did not start serving in time")
	}
	return ""
}

func goCommand(t *testing.T, ctx context.Context, dir string, args ...string) string {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// testWriter logs a process's output line by line, and sends the URL of
// a "serving URL ..." line on serving, if set.
type testWriter struct {
	t       *testing.T
	prefix  string
	serving chan<- string
	partial string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.partial += string(p)
	for {
		line, rest, ok := strings.Cut(w.partial, "\n")
		if !ok {
			return len(p), nil
		}
		w.partial = rest
		w.t.Log(w.prefix + line)
		if url, ok := strings.CutPrefix(line, "serving "); ok && w.serving != nil {
			w.serving <- strings.Fields(url)[0]
			w.serving = nil
		}
	}
}
