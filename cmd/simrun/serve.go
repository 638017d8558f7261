package main

import (
	"bytes"
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// simrun serve: the simulator in a browser. The page (page/, embedded) loads
// the simulator compiled to WebAssembly and runs it there; the server only
// hands out files. The .wasm is not committed: serve builds it at start from
// the checkout it runs in (cmd/simrun/wasm), with the `go` command on PATH,
// into the user's cache directory, so the page always runs the code of the
// tree beside it. Go's build cache makes every start after the first quick.
// wasm_exec.js comes from the same toolchain's GOROOT, as it must: it is the
// glue for that release's wasm ABI.

//go:embed page
var pageFiles embed.FS

// wasmPackage is the entry point serve compiles for GOOS=js GOARCH=wasm.
const wasmPackage = "github.com/courierlab/courier/cmd/simrun/wasm"

func serveCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simrun serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address; the default serves this machine only (port 0 picks a free port)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simrun serve: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	// Listen first: a busy or bad address fails before the build.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "simrun serve: -addr:", err)
		return exitUsage
	}
	defer ln.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cache, err := os.UserCacheDir()
	if err != nil {
		fmt.Fprintln(stderr, "simrun serve: no cache directory for the page's simulator:", err)
		return exitCrash
	}
	fmt.Fprintln(stdout, "building the simulator for the browser (GOOS=js GOARCH=wasm) ...")
	page, err := buildPage(ctx, filepath.Join(cache, "courier", "simrun-serve"))
	if ctx.Err() != nil {
		return exitOK // interrupted while building
	}
	if err != nil {
		fmt.Fprintln(stderr, "simrun serve:", err)
		return exitCrash
	}
	fmt.Fprintf(stdout, "built %s with %s\n", page.wasm, page.toolchain)
	if page.toolchain != runtime.Version() {
		fmt.Fprintf(stdout, "note: simrun itself was built with %s\n", runtime.Version())
	}

	srv := &http.Server{Handler: page.handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "serving http://%s/ (Ctrl-C stops)\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintln(stderr, "simrun serve:", err)
		return exitCrash
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintln(stderr, "simrun serve: shutdown:", err)
	}
	return exitOK
}

// page is what serve hands out besides the embedded files.
type page struct {
	wasm      string // path of the built simulator
	wasmExec  []byte // the toolchain's wasm_exec.js
	toolchain string // its go version, e.g. go1.26.8
}

// buildPage compiles the wasm entry point into dir and reads the matching
// wasm_exec.js. It runs in the current directory, which must be inside a
// courier checkout.
func buildPage(ctx context.Context, dir string) (page, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return page{}, fmt.Errorf("the page's simulator is built from source and needs the go command on PATH: %w", err)
	}
	env, err := exec.CommandContext(ctx, goCmd, "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return page{}, fmt.Errorf("go env GOROOT GOVERSION: %w", err)
	}
	lines := strings.Fields(string(env))
	if len(lines) != 2 {
		return page{}, fmt.Errorf("go env GOROOT GOVERSION printed %q; want two lines", env)
	}
	p := page{toolchain: lines[1], wasm: filepath.Join(dir, "sim.wasm")}
	p.wasmExec, err = os.ReadFile(filepath.Join(lines[0], "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return page{}, fmt.Errorf("the toolchain's wasm_exec.js: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return page{}, err
	}
	// Build beside the target and rename, so that two serves never hand
	// out a half-written file.
	tmp, err := os.CreateTemp(dir, "sim-*.wasm")
	if err != nil {
		return page{}, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	build := exec.CommandContext(ctx, goCmd, "build", "-o", tmp.Name(), wasmPackage)
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		return page{}, fmt.Errorf("building %s for js/wasm (serve builds the page from source: run it inside a courier checkout): %w\n%s", wasmPackage, err, out.Bytes())
	}
	return p, os.Rename(tmp.Name(), p.wasm)
}

// handler serves the page, its script and style, wasm_exec.js and the
// simulator; nothing else. Every response says not to cache it: a rebuilt
// simulator must never meet a stale page.
func (p page) handler() http.Handler {
	files, err := fs.Sub(pageFiles, "page")
	if err != nil {
		panic(fmt.Sprintf("the embedded page has no page directory: %v", err)) // fixed at build time
	}
	static := http.FileServerFS(files)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", static)
	mux.Handle("GET /app.js", static)
	mux.Handle("GET /style.css", static)
	mux.HandleFunc("GET /wasm_exec.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Write(p.wasmExec)
	})
	mux.HandleFunc("GET /sim.wasm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/wasm")
		http.ServeFile(w, r, p.wasm)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}
