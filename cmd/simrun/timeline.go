package main

import (
	"fmt"
	"io"
	"os"

	"github.com/courierlab/courier/sim"
	"github.com/courierlab/courier/sim/timeline"
)

// openOutput creates the output file path ("" for none) before any run,
// so that a path that cannot be written fails at once, not after minutes
// of runs.
func openOutput(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	return os.Create(path)
}

// writeTimeline writes the self-contained timeline page of r (see package
// timeline; the browser page draws the same SVG) to f and closes it. An
// error is reported on stderr and returned as exitOutput; the verdict is
// the caller's to print.
func writeTimeline(f *os.File, title string, r sim.Result, stdout, stderr io.Writer) int {
	_, err := f.WriteString(timeline.Page(title, r))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "simrun: writing the timeline: %v\n", err)
		return exitOutput
	}
	fmt.Fprintf(stdout, "timeline: %s\n", f.Name())
	return exitOK
}
