// Package timeline draws a simulated run as one SVG: a lane per event
// with its states over virtual time, its sends and the receiver's verdicts
// as marks, the circuit and the probes as a band above, outages and
// flapping shaded, restarts as dashed lines.
//
// Two callers share the one renderer: `simrun run -html` writes Page to a
// file, and the browser page (`simrun serve`, compiled to WebAssembly)
// places SVG and Legend in its own document. It reads only the run's
// observation log and world; it imports nothing that touches the host, so
// it builds for GOOS=js GOARCH=wasm.
package timeline
