// Tests of the comparison's arithmetic, and, when COURIER_TEST_POSTGRES
// names a database, one small round of every shape end to end, so that a
// change to courier's API or River's is caught before the next
// measurement.
package main

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"odd count: the middle", []float64{5, 1, 3}, 3},
		{"even count: the mean of the two middles", []float64{4, 1, 3, 2}, 2.5},
		{"NaNs left out", []float64{nan, 7, nan, 1, 4}, 4},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("%s: median(%v) = %v, want %v", c.name, c.xs, got, c.want)
		}
	}
	if got := median([]float64{nan}); !math.IsNaN(got) {
		t.Errorf("median of NaNs only = %v, want NaN", got)
	}
}

func TestTableQuotesMediansAndRatios(t *testing.T) {
	s := []shape{{name: "pg drain, 8 streams", sides: [2]side{{name: "courier"}, {name: "river"}}}}
	rs := [][2][]result{{
		{{rate: 100, xacts: 1}, {rate: 300, xacts: 1.2}, {rate: 200, xacts: 1.1}},
		{{rate: 400, xacts: 0.2}, {rate: 500, xacts: 0.2}, {rate: 1000, xacts: 0.3}},
	}}
	var b bytes.Buffer
	printTable(&b, s, rs)
	// Medians 200 and 500 (ratio 0.4); round ratios 0.25, 0.6, 0.2.
	want := "| pg drain, 8 streams (vs river) | 200.0 | 500.0 | 0.400 | 0.250 (0.200–0.600) | 1.10 / 0.20 |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("table lacks\n%s\ngot:\n%s", want, b.String())
	}
}

func TestEveryShapeRunsOnARealDatabase(t *testing.T) {
	conn := os.Getenv("COURIER_TEST_POSTGRES")
	if conn == "" {
		t.Skip("COURIER_TEST_POSTGRES is not set")
	}
	o := options{postgres: conn, rounds: 1, events: 40, steady: time.Second, timeout: time.Minute}
	ctx := t.Context()
	for _, s := range shapes(o) {
		for _, sd := range s.sides {
			r, err := sd.run(ctx)
			if err != nil {
				t.Fatalf("%s, %s: %v", s.name, sd.name, err)
			}
			switch {
			case strings.Contains(s.name, "drain") && (r.delivered != int64(o.events) || r.rate <= 0):
				t.Errorf("%s, %s: delivered %d of %d at %v/s", s.name, sd.name, r.delivered, o.events, r.rate)
			case strings.Contains(s.name, "steady") && (r.delivered == 0 || r.published <= 0):
				t.Errorf("%s, %s: delivered %d, published %v/s; want both above 0", s.name, sd.name, r.delivered, r.published)
			}
		}
	}
}
