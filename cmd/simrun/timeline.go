package main

import (
	"fmt"
	"html"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

// The timeline is one self-contained HTML page with an inline SVG: no
// script, no external file. One lane per event shows its states over
// virtual time, with its sends and the receiver's verdicts as marks; a
// band above shows the circuit and the probes; outages and flapping are
// shaded across every lane; restarts are vertical lines. It is written as
// well-formed XML so that a test can parse it.

const (
	tlLabelWidth = 70
	tlPlotWidth  = 1100
	tlBandHeight = 16
	tlTop        = 40
)

var stateColor = map[machine.State]string{
	machine.Pending:   "#9ecae1",
	machine.Retry:     "#fd8d3c",
	machine.Parked:    "#9e9ac8",
	machine.Delivered: "#a1d99b",
	machine.Dead:      "#525252",
}

var circuitColor = map[machine.Circuit]string{
	machine.Closed:   "#e5f5e0",
	machine.Checking: "#fee391",
	machine.Open:     "#fb6a4a",
}

type segment struct {
	from, to time.Duration
	state    machine.State
	attempts int
}

// openOutput creates the output file path ("" for none) before any run,
// so that a path that cannot be written fails at once, not after minutes
// of runs.
func openOutput(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	return os.Create(path)
}

// writeTimeline writes the run's timeline to f and closes it. An error is
// reported on stderr and returned as exitOutput; the verdict is the
// caller's to print.
func writeTimeline(f *os.File, title string, r sim.Result, stdout, stderr io.Writer) int {
	_, err := f.WriteString(timelineHTML(title, r))
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

func timelineHTML(title string, r sim.Result) string {
	entries := r.Run.Entries
	end := r.Stats.End
	if end <= 0 {
		end = time.Second
	}
	x := func(d time.Duration) float64 {
		return tlLabelWidth + float64(tlPlotWidth)*float64(d)/float64(end)
	}
	rel := func(t time.Time) time.Duration { return t.Sub(sim.Epoch) }

	// Lanes in acceptance order, segments from the persisted states.
	var ids []string
	segs := map[string][]segment{}
	for _, e := range entries {
		if e.Kind != invariants.Persisted {
			continue
		}
		s := segs[e.ID]
		if s == nil {
			ids = append(ids, e.ID)
		}
		at := rel(e.At)
		if n := len(s); n > 0 && s[n-1].state == e.Record.State {
			s[n-1].attempts = e.Record.Attempts
		} else {
			if n > 0 {
				s[n-1].to = at
			}
			s = append(s, segment{from: at, to: end, state: e.Record.State, attempts: e.Record.Attempts})
		}
		segs[e.ID] = s
	}
	lane := 14.0
	if len(ids) > 50 {
		lane = max(3, 700/float64(len(ids)))
	}
	laneOf := map[string]int{}
	for i, id := range ids {
		laneOf[id] = i
	}
	lanesTop := float64(tlTop + 3*tlBandHeight + 10)
	height := lanesTop + lane*float64(len(ids)) + 60
	width := tlLabelWidth + tlPlotWidth + 20

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	esc := html.EscapeString

	w("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	w("<title>courier timeline: %s</title>\n", esc(title))
	w("<style>body{font-family:sans-serif;margin:16px}svg text{font-size:10px;font-family:monospace}" +
		".legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}</style>\n")
	w("</head>\n<body>\n<h1>%s</h1>\n", esc(title))
	s := r.Stats
	w("<p>%s</p>\n", esc(r.World.Describe()))
	w("<p>%d accepted, %d applied, %d dead, %d lost, %d applied twice; %d sends, %d probes, %d circuit openings, %d restarts; trace hash %s; %s</p>\n",
		s.Accepted, s.Applied, s.Dead, s.Lost, s.AppliedTwice, s.Sends, s.Probes, s.CircuitOpenings, s.Restarts, esc(r.Hash),
		esc(violationSummary(r.Violations)))
	w("<p class=\"legend\">")
	for _, st := range sim.States() {
		w("<span><span class=\"sw\" style=\"background:%s\"></span>%s</span>", stateColor[st], st)
	}
	w("<span>| send</span><span>&#9679; applied</span><span>&#215; discarded</span><span>circuit: ")
	for _, c := range []machine.Circuit{machine.Closed, machine.Checking, machine.Open} {
		w("<span class=\"sw\" style=\"background:%s\"></span>%s ", circuitColor[c], c)
	}
	w("</span><span>grey: outage, hatched: flapping, dashed: restart or crash, &#9660; lease granted</span></p>\n")

	w("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n", width, height, width, height)
	w("<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">" +
		"<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#f16913\" stroke-width=\"2\" opacity=\"0.35\"/></pattern></defs>\n")

	// Time axis.
	step := niceStep(end)
	for t := time.Duration(0); t <= end; t += step {
		w("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eee\"/>", x(t), tlTop-5, x(t), height-40)
		w("<text x=\"%.1f\" y=\"%d\">%s</text>\n", x(t)+2, tlTop-8, t)
	}
	// Fault shading across every lane.
	shade := func(ws []sim.Window, fill string, label string) {
		for _, win := range ws {
			w("<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\" opacity=\"0.35\"><title>%s %v</title></rect>\n",
				x(win.From), tlTop, x(win.To)-x(win.From), height-40-tlTop, fill, label, win)
		}
	}
	shade(r.World.Channel.Outages, "#bdbdbd", "outage")
	shade(r.World.Channel.Flapping, "url(#hatch)", "flapping")

	// Circuit band and probes.
	circuitY := tlTop
	w("<text x=\"2\" y=\"%d\">circuit</text>\n", circuitY+11)
	var cFrom time.Duration
	cur := machine.Closed
	for _, e := range entries {
		if e.Kind != invariants.CircuitChanged || e.Circuit == 0 {
			continue
		}
		at := rel(e.At)
		w("<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>%s %v..%v</title></rect>\n",
			x(cFrom), circuitY, max(x(at)-x(cFrom), 0), tlBandHeight, circuitColor[cur], cur, cFrom, at)
		cFrom, cur = at, e.Circuit
	}
	w("<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>%s from %v</title></rect>\n",
		x(cFrom), circuitY, max(x(end)-x(cFrom), 0), tlBandHeight, circuitColor[cur], cur, cFrom)
	probeY := circuitY + tlBandHeight + 4
	w("<text x=\"2\" y=\"%d\">probes</text>\n", probeY+11) // and lease grants, as triangles
	for _, e := range entries {
		switch e.Kind {
		case invariants.Probed:
			w("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#08519c\"><title>probe %s at %v</title></line>\n",
				x(rel(e.At)), probeY, x(rel(e.At)), probeY+tlBandHeight, esc(e.Detail), rel(e.At))
		case invariants.LeaseGranted:
			w("<text x=\"%.1f\" y=\"%d\" fill=\"#238b45\">&#9660;<title>lease to %s, token %d, at %v</title></text>\n",
				x(rel(e.At))-4, probeY+10, esc(e.Worker), e.Token, rel(e.At))
		case invariants.Restarted:
			w("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#cb181d\" stroke-dasharray=\"4 3\"><title>restart at %v: %s</title></line>\n",
				x(rel(e.At)), tlTop, x(rel(e.At)), height-40, rel(e.At), esc(e.Detail))
		}
	}

	// Event lanes.
	laneY := func(id string) float64 { return lanesTop + lane*float64(laneOf[id]) }
	labelEvery := 1
	if lane < 9 {
		labelEvery = int(9/lane) + 1
	}
	for i, id := range ids {
		y := laneY(id)
		if i%labelEvery == 0 {
			w("<text x=\"2\" y=\"%.1f\">%s</text>\n", y+min(lane, 10)-1, esc(id))
		}
		for _, sg := range segs[id] {
			w("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>%s %s %v..%v attempts=%d</title></rect>\n",
				x(sg.from), y, max(x(sg.to)-x(sg.from), 0.5), max(lane-1, 1), stateColor[sg.state], esc(id), sg.state, sg.from, sg.to, sg.attempts)
		}
	}
	for _, e := range entries {
		if _, ok := laneOf[e.ID]; !ok {
			continue
		}
		y, at := laneY(e.ID), rel(e.At)
		switch e.Kind {
		case invariants.Sent:
			w("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"><title>send %s#%d at %v</title></line>\n",
				x(at), y, x(at), y+max(lane-1, 1), esc(e.ID), e.Attempt, at)
		case invariants.Applied:
			w("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"#006d2c\"><title>applied %s at %v</title></circle>\n",
				x(at), y+lane/2, max(lane/3, 1), esc(e.ID), at)
		case invariants.Discarded:
			w("<text x=\"%.1f\" y=\"%.1f\" fill=\"#737373\">&#215;<title>%s %s at %v</title></text>\n",
				x(at)-3, y+lane-1, esc(e.Detail), esc(e.ID), at)
		}
	}
	w("<text x=\"%d\" y=\"%.0f\">virtual time since the run's epoch; hover a mark for details</text>\n", tlLabelWidth, height-20)
	w("</svg>\n</body>\n</html>\n")
	return b.String()
}

func violationSummary(vs []invariants.Violation) string {
	if len(vs) == 0 {
		return fmt.Sprintf("all %d invariants held", len(invariants.Names))
	}
	var names []string
	for _, v := range vs {
		if !slices.Contains(names, v.Invariant) {
			names = append(names, v.Invariant)
		}
	}
	return fmt.Sprintf("%d violations (%s)", len(vs), strings.Join(names, ", "))
}

// niceStep picks a grid step giving about ten lines over end.
func niceStep(end time.Duration) time.Duration {
	for _, s := range []time.Duration{
		100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
	} {
		if end/s <= 12 {
			return s
		}
	}
	return end / 10
}
