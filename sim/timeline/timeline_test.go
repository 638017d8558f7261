// The timeline stays legible as runs grow: up to 120 events every lane
// carries its event's label, and the SVG parses as XML with one lane per
// accepted event, whether it stands alone (Page) or inside the browser
// page (SVG).
package timeline

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

func TestEveryLaneLabelledUpTo120Events(t *testing.T) {
	for _, events := range []int{10, 80, 120} {
		t.Run(fmt.Sprint(events), func(t *testing.T) {
			w := scenarios.Base(1)
			w.Events = events
			r, err := sim.Run(w, 1, sim.Options{Logs: true})
			if err != nil {
				t.Fatal(err)
			}
			labels := laneLabels(t, SVG(r))
			if len(labels) != r.Stats.Accepted {
				t.Fatalf("%d lane labels for %d accepted events", len(labels), r.Stats.Accepted)
			}
			for i, got := range labels {
				if want := sim.EventID(i); got != want {
					t.Errorf("lane %d is labelled %q, want %q", i, got, want)
				}
			}
		})
	}
}

func TestPageEmbedsTheSVG(t *testing.T) {
	sc, err := scenarios.Lookup("outage")
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := sc.Run(1, sim.Options{Logs: true})
	if err != nil {
		t.Fatal(err)
	}
	page := Page("scenario outage, seed 1", r)
	if !strings.Contains(page, SVG(r)) || !strings.Contains(page, Legend()) {
		t.Error("Page does not carry the SVG and the legend the browser page shows")
	}
	if !strings.Contains(page, "trace hash "+r.Hash) {
		t.Errorf("Page lacks the trace hash %s", r.Hash)
	}
}

// laneLabels returns the texts at x=2 below the circuit and probe bands:
// the event labels, top to bottom.
func laneLabels(t *testing.T, svg string) []string {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var labels []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return labels
		}
		if err != nil {
			t.Fatalf("the SVG is not well formed: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "text" || attr(se, "x") != "2" {
			continue
		}
		var text string
		if err := d.DecodeElement(&text, &se); err != nil {
			t.Fatal(err)
		}
		if text != "circuit" && text != "probes" {
			labels = append(labels, text)
		}
	}
}

func attr(se xml.StartElement, name string) string {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// TestPageDrawsEveryStream: a world of several streams gets one SVG per
// stream, each under a heading naming it, each drawn from its own log.
func TestPageDrawsEveryStream(t *testing.T) {
	sc, err := scenarios.Lookup("outage")
	if err != nil {
		t.Fatal(err)
	}
	w := sc.World(1)
	w.Streams = 3
	r, err := sim.Run(w, 1, sim.Options{Logs: true})
	if err != nil {
		t.Fatal(err)
	}
	page := Page("outage over three streams", r)
	if n := strings.Count(page, "<svg "); n != 3 {
		t.Fatalf("page has %d svg elements, want 3", n)
	}
	for i, run := range r.Runs {
		one := r
		one.Run = run
		name := sim.StreamName(i, 3)
		if !strings.Contains(page, "<h2>stream "+name+"</h2>\n"+SVG(one)) {
			t.Errorf("stream %s is not drawn under its heading from its own log", name)
		}
	}
}
