package main

import (
	"os"

	"github.com/courierlab/courier/internal/timeline"
	"github.com/courierlab/courier/sim"
)

// writeTimeline writes the self-contained timeline page of r (see package
// timeline; the browser page draws the same SVG).
func writeTimeline(path, title string, r sim.Result) error {
	return os.WriteFile(path, []byte(timeline.Page(title, r)), 0o644)
}
