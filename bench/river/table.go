package main

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// median is the middle of xs (the mean of the two middles for an even
// count), NaNs left out; NaN when none is left.
func median(xs []float64) float64 {
	var ys []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			ys = append(ys, x)
		}
	}
	if len(ys) == 0 {
		return math.NaN()
	}
	slices.Sort(ys)
	m := len(ys) / 2
	if len(ys)%2 == 1 {
		return ys[m]
	}
	return (ys[m-1] + ys[m]) / 2
}

// printTable prints, per shape, each side's median rate, courier's
// ratio to the other side (ratio of the medians, and the median of the
// rounds' own ratios with their range), and the median transactions per
// delivered event where they were counted.
func printTable(w io.Writer, chosen []shape, results [][2][]result) {
	fmt.Fprintf(w, "| shape | courier /s | other /s | courier ÷ other (medians) | per-round ratio: median (min–max) | xacts/delivered courier / other |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|\n")
	for i, s := range chosen {
		ours, theirs := results[i][0], results[i][1]
		var a, b, ratios, xa, xb []float64
		for k := range ours {
			a = append(a, ours[k].rate)
			b = append(b, theirs[k].rate)
			ratios = append(ratios, ours[k].rate/theirs[k].rate)
			xa = append(xa, ours[k].xacts)
			xb = append(xb, theirs[k].xacts)
		}
		xacts := "–"
		if !math.IsNaN(median(xa)) {
			xacts = fmt.Sprintf("%.2f / %.2f", median(xa), median(xb))
		}
		fmt.Fprintf(w, "| %s (vs %s) | %.1f | %.1f | %.3f | %.3f (%.3f–%.3f) | %s |\n",
			s.name, s.sides[1].name, median(a), median(b), median(a)/median(b),
			median(ratios), slices.Min(ratios), slices.Max(ratios), xacts)
	}
	fmt.Fprintf(w, "\n%d rounds; medians of the rounds.\n", len(results[0][0]))
}
