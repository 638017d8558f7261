package timeline

import (
	"fmt"
	"html"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

const (
	labelWidth = 70
	plotWidth  = 1100
	bandHeight = 16
	top        = 40
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

var esc = html.EscapeString

// Page is one self-contained HTML page with the inline SVG: no script, no
// external file. It is written as well-formed XML so that a test can parse
// it.
func Page(title string, r sim.Result) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
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
	w("<p class=\"legend\">%s</p>\n", Legend())
	b.WriteString(Streams(r))
	w("</body>\n</html>\n")
	return b.String()
}

// Legend is the key to SVG's colours and marks, as a run of XHTML spans
// (class "sw" is a colour swatch); the caller styles and wraps it.
func Legend() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	for _, st := range sim.States() {
		w("<span><span class=\"sw\" style=\"background:%s\"></span>%s</span>", stateColor[st], st)
	}
	w("<span>| send</span><span>&#9679; applied</span><span>&#215; discarded</span><span>circuit: ")
	for _, c := range []machine.Circuit{machine.Closed, machine.Checking, machine.Open} {
		w("<span class=\"sw\" style=\"background:%s\"></span>%s ", circuitColor[c], c)
	}
	w("</span><span>grey: outage, hatched: flapping, dashed: restart or crash, &#9660; lease granted</span>")
	return b.String()
}

type segment struct {
	from, to time.Duration
	state    machine.State
	attempts int
}

// drawing is one SVG being written: the run, its scales and the output.
type drawing struct {
	r        sim.Result
	b        strings.Builder
	end      time.Duration
	ids      []string // lanes, in acceptance order
	segs     map[string][]segment
	laneOf   map[string]int
	lane     float64 // lane height
	lanesTop float64
	height   float64
}

func (d *drawing) w(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

func (d *drawing) x(t time.Duration) float64 {
	return labelWidth + float64(plotWidth)*float64(t)/float64(d.end)
}

func rel(t time.Time) time.Duration { return t.Sub(sim.Epoch) }

// Streams draws every stream of r: its SVG alone when r has one stream,
// else each stream's SVG under a heading naming it. Each stream has its
// own log, circuit and lanes; faults and the time axis are the run's.
func Streams(r sim.Result) string {
	if len(r.Runs) <= 1 {
		return SVG(r)
	}
	var b strings.Builder
	for i, run := range r.Runs {
		one := r
		one.Run = run
		fmt.Fprintf(&b, "<h2>stream %s</h2>\n", esc(sim.StreamName(i, len(r.Runs))))
		b.WriteString(SVG(one))
	}
	return b.String()
}

// SVG draws the first stream of r (r.Run) as one svg element whose text
// is styled by the "svg text" rule of the enclosing page. Hover a mark for its details
// (each carries a title).
func SVG(r sim.Result) string {
	d := &drawing{r: r, end: r.Stats.End, segs: map[string][]segment{}, laneOf: map[string]int{}}
	if d.end <= 0 {
		d.end = time.Second
	}
	d.layout()
	width := labelWidth + plotWidth + 20
	d.w("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n", width, d.height, width, d.height)
	d.w("<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">" +
		"<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#f16913\" stroke-width=\"2\" opacity=\"0.35\"/></pattern></defs>\n")
	d.axisAndFaults()
	d.circuitAndProbes()
	d.lanes()
	d.w("<text x=\"%d\" y=\"%.0f\">virtual time since the run's epoch; hover a mark for details</text>\n", labelWidth, d.height-20)
	d.w("</svg>\n")
	return d.b.String()
}

// layout builds the lanes from the persisted states and sizes them: 14px
// a lane up to 50 events, 11px (every lane still labelled) up to 120,
// then thinner.
func (d *drawing) layout() {
	for _, e := range d.r.Run.Entries {
		if e.Kind != invariants.Persisted {
			continue
		}
		s := d.segs[e.ID]
		if s == nil {
			d.ids = append(d.ids, e.ID)
		}
		at := rel(e.At)
		if n := len(s); n > 0 && s[n-1].state == e.Record.State {
			s[n-1].attempts = e.Record.Attempts
		} else {
			if n > 0 {
				s[n-1].to = at
			}
			s = append(s, segment{from: at, to: d.end, state: e.Record.State, attempts: e.Record.Attempts})
		}
		d.segs[e.ID] = s
	}
	switch n := len(d.ids); {
	case n <= 50:
		d.lane = 14
	case n <= 120:
		d.lane = 11
	default:
		d.lane = max(3, 1320/float64(n))
	}
	for i, id := range d.ids {
		d.laneOf[id] = i
	}
	d.lanesTop = float64(top + 3*bandHeight + 10)
	d.height = d.lanesTop + d.lane*float64(len(d.ids)) + 60
}

func (d *drawing) axisAndFaults() {
	step := niceStep(d.end)
	for t := time.Duration(0); t <= d.end; t += step {
		d.w("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eee\"/>", d.x(t), top-5, d.x(t), d.height-40)
		d.w("<text x=\"%.1f\" y=\"%d\">%s</text>\n", d.x(t)+2, top-8, t)
	}
	shade := func(ws []sim.Window, fill string, label string) {
		for _, win := range ws {
			d.w("<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\" opacity=\"0.35\"><title>%s %v</title></rect>\n",
				d.x(win.From), top, d.x(win.To)-d.x(win.From), d.height-40-top, fill, label, win)
		}
	}
	shade(d.r.World.Channel.Outages, "#bdbdbd", "outage")
	shade(d.r.World.Channel.Flapping, "url(#hatch)", "flapping")
}

func (d *drawing) circuitAndProbes() {
	circuitY := top
	d.w("<text x=\"2\" y=\"%d\">circuit</text>\n", circuitY+11)
	var cFrom time.Duration
	cur := machine.Closed
	band := func(to time.Duration) {
		d.w("<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>%s %v..%v</title></rect>\n",
			d.x(cFrom), circuitY, max(d.x(to)-d.x(cFrom), 0), bandHeight, circuitColor[cur], cur, cFrom, to)
	}
	for _, e := range d.r.Run.Entries {
		if e.Kind != invariants.CircuitChanged || e.Circuit == 0 {
			continue
		}
		at := rel(e.At)
		band(at)
		cFrom, cur = at, e.Circuit
	}
	band(d.end)
	probeY := circuitY + bandHeight + 4
	d.w("<text x=\"2\" y=\"%d\">probes</text>\n", probeY+11) // and lease grants, as triangles
	for _, e := range d.r.Run.Entries {
		at := rel(e.At)
		switch e.Kind {
		case invariants.Probed:
			d.w("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#08519c\"><title>probe %s at %v</title></line>\n",
				d.x(at), probeY, d.x(at), probeY+bandHeight, esc(e.Detail), at)
		case invariants.LeaseGranted:
			d.w("<text x=\"%.1f\" y=\"%d\" fill=\"#238b45\">&#9660;<title>lease to %s, token %d, at %v</title></text>\n",
				d.x(at)-4, probeY+10, esc(e.Worker), e.Token, at)
		case invariants.Restarted:
			d.w("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#cb181d\" stroke-dasharray=\"4 3\"><title>restart at %v: %s</title></line>\n",
				d.x(at), top, d.x(at), d.height-40, at, esc(e.Detail))
		}
	}
}

func (d *drawing) lanes() {
	lane := d.lane
	laneY := func(id string) float64 { return d.lanesTop + lane*float64(d.laneOf[id]) }
	labelEvery := 1
	if lane < 9 {
		labelEvery = int(9/lane) + 1
	}
	for i, id := range d.ids {
		y := laneY(id)
		if i%labelEvery == 0 {
			d.w("<text x=\"2\" y=\"%.1f\">%s</text>\n", y+min(lane, 10)-1, esc(id))
		}
		for _, sg := range d.segs[id] {
			d.w("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>%s %s %v..%v attempts=%d</title></rect>\n",
				d.x(sg.from), y, max(d.x(sg.to)-d.x(sg.from), 0.5), max(lane-1, 1), stateColor[sg.state], esc(id), sg.state, sg.from, sg.to, sg.attempts)
		}
	}
	for _, e := range d.r.Run.Entries {
		if _, ok := d.laneOf[e.ID]; !ok {
			continue
		}
		y, at := laneY(e.ID), rel(e.At)
		switch e.Kind {
		case invariants.Sent:
			d.w("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"><title>send %s#%d at %v</title></line>\n",
				d.x(at), y, d.x(at), y+max(lane-1, 1), esc(e.ID), e.Attempt, at)
		case invariants.Applied:
			d.w("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"#006d2c\"><title>applied %s at %v</title></circle>\n",
				d.x(at), y+lane/2, max(lane/3, 1), esc(e.ID), at)
		case invariants.Discarded:
			d.w("<text x=\"%.1f\" y=\"%.1f\" fill=\"#737373\">&#215;<title>%s %s at %v</title></text>\n",
				d.x(at)-3, y+lane-1, esc(e.Detail), esc(e.ID), at)
		}
	}
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
