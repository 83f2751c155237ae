package plots

import (
	"fmt"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// rateCompareThroughputChart overlays the completion rate against the arrival rate of
// several arrival-rate runs, one colour per run, with the line y = x and each run's capacity
// marked with a large triangle at (capacity_rps, capacity_rps), where its line leaves y = x
// (a capacity that is a bound, at_least or at_most, says so in the legend).
func rateCompareThroughputChart(runs []*analysis.Result, labels []string) (*builder, error) {
	b := newBuilder(compareTitle("Completion rate vs arrival rate — comparison", runs), xLabelRate, "completed (requests/s)")
	drawn, hadInvalid := false, false
	var caps []*plotter.Scatter // added after every run's line, so no line covers a marker
	for i, r := range runs {
		v, inv := series(rateLevelsOf(r), arrival, completion)
		drawn = drawn || len(v)+len(inv) > 0
		hi, err := b.addSeries(labels[i], runColor(i), nil, draw.CircleGlyph{}, v, inv)
		if err != nil {
			return nil, err
		}
		hadInvalid = hadInvalid || hi
		rr := r.Rate
		if rr == nil || !rr.CapacityRPS.OK() || rr.CapacityRPS <= 0 {
			continue
		}
		c := float64(rr.CapacityRPS)
		s, err := plotter.NewScatter(plotter.XYs{{X: c, Y: c}})
		if err != nil {
			return nil, fmt.Errorf("plots: compare throughput: capacity: %w", err)
		}
		s.Color, s.Shape, s.Radius = runColor(i), draw.PyramidGlyph{}, vg.Points(6)
		caps = append(caps, s)
		name := labels[i] + " capacity ≈ " + fmtNum(c) + " req/s"
		switch rr.CapacityBound {
		case "at_least":
			name = labels[i] + " capacity ≥ " + fmtNum(c) + " req/s (every level sustained)"
		case "at_most":
			name += " (below every level)"
		}
		b.legend(name, s)
		b.track([]float64{c}, []float64{c})
	}
	if !drawn {
		return b.noData("no data: no run has an offered and a completion rate")
	}
	b.diagonal("y = x: every request that arrived completed")
	for _, s := range caps {
		b.p.Add(s)
	}
	if hadInvalid {
		b.addExcludedLegend()
	}
	return b.finish()
}

// rateCompareLatencyChart overlays TTFT p95 (solid) and E2E p95 (dashed) from the scheduled
// arrival (the send time for a level without it) against the arrival rate, one colour per
// run.
func rateCompareLatencyChart(runs []*analysis.Result, labels []string) (*builder, error) {
	b := newBuilder(compareTitle("Latency vs arrival rate — comparison", runs), xLabelRate, "latency p95 (ms)")
	b.autoLogY = true
	drawn, hadInvalid := false, false
	for i, r := range runs {
		d, hi, err := b.addLatencies(rateLevelsOf(r), arrival, []latencySeries{
			{labels[i] + " TTFT p95", runColor(i), nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return l.UserTTFT().P95 }},
			{labels[i] + " E2E p95", runColor(i), dashed, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return l.UserE2E().P95 }},
		})
		if err != nil {
			return nil, err
		}
		drawn, hadInvalid = drawn || d, hadInvalid || hi
	}
	if !drawn {
		return b.noData("no data: no run has a latency")
	}
	if hadInvalid {
		b.addExcludedLegend()
	}
	return b.finish()
}
