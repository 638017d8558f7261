//go:build js && wasm

// Command wasm is courier's simulator compiled to WebAssembly for the page
// `simrun serve` serves. It runs the same scenarios, swarm worlds, machine
// and checker as the CLI, in the browser, and hands each run to the page as
// one JSON report; the same seed gives the same trace hash as
// `simrun run`.
//
// It defines globalThis.courier with two functions, then calls
// globalThis.courierReady() and waits forever (the page calls in):
//
//	courier.scenarios() -> JSON [{name, why}]
//	courier.run(kind, name, seed) -> JSON report
//
// kind is "scenario" (name one of scenarios()) or "swarm" (name ignored);
// seed is a decimal string, since a uint64 does not fit a JS number.
//
// Build it with GOOS=js GOARCH=wasm go build -o sim.wasm ./cmd/simrun/wasm.
package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall/js"

	"github.com/courierlab/courier/scenarios"
)

func main() {
	api := js.Global().Get("Object").New()
	api.Set("scenarios", js.FuncOf(func(js.Value, []js.Value) any { return listScenarios() }))
	api.Set("run", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) != 3 {
			return encode(report{Error: fmt.Sprintf("courier.run takes (kind, name, seed), got %d arguments", len(args))})
		}
		return encode(run(args[0].String(), args[1].String(), args[2].String()))
	}))
	api.Set("build", build())
	js.Global().Set("courier", api)
	if ready := js.Global().Get("courierReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

func listScenarios() string {
	type entry struct {
		Name string `json:"name"`
		Why  string `json:"why"`
	}
	var out []entry
	for _, s := range scenarios.All() {
		out = append(out, entry{s.Name, s.Why})
	}
	return encode(out)
}

// build says what this simulator was built from: the Go release and, when
// the build stamped it, the commit (with "+dirty" for uncommitted changes).
func build() string {
	s := runtime.Version() + " js/wasm"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return s
	}
	var rev, dirty string
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value[:min(12, len(kv.Value))]
		case "vcs.modified":
			if kv.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		s += ", courier " + rev + dirty
	}
	return s
}

func encode(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Every value encoded here is plain strings, numbers and slices.
		panic(fmt.Sprintf("encoding the report: %v", err))
	}
	return string(data)
}

func parseSeed(s string) (uint64, error) {
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("seed %q is not a decimal number from 0 to %d", s, uint64(1<<64-1))
	}
	return seed, nil
}
