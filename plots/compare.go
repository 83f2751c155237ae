package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// checkRuns validates the arguments of the comparison charts.
func checkRuns(op string, runs []*analysis.Result, labels []string) error {
	if len(runs) == 0 {
		return fmt.Errorf("plots: %s: no runs", op)
	}
	if err := analysis.Comparable(runs, labels); err != nil {
		return fmt.Errorf("plots: %s: %w", op, err)
	}
	return nil
}

// compareTitle names the chart and the runs' common model, if they share one.
func compareTitle(kind string, runs []*analysis.Result) string {
	model := runs[0].Meta.Model
	for _, r := range runs[1:] {
		if r.Meta.Model != model {
			model = ""
		}
	}
	if model == "" {
		return kind
	}
	return kind + "\n" + model
}

// CompareThroughput overlays the output-TPS curves of several runs against concurrency (log2
// axis), one colour per run. Each run's headline knee concurrency is marked with a large
// triangle on that run's measured line: its y is the measured TPS interpolated between the
// neighbouring valid levels linearly in log2 concurrency (so it lies on the segment drawn on
// the log2 axis), not the fitted curve's TPS, which is not drawn here. A knee outside the
// run's valid levels is a dashed vertical line in the run's colour instead. labels[i] names
// runs[i]. Arrival-rate runs are drawn against the arrival rate instead (DESIGN §5.1); runs of both modes
// are an error (analysis.SameMode).
func CompareThroughput(runs []*analysis.Result, labels []string) (*Figure, error) {
	return plotOf(compareThroughputChart(runs, labels))
}

func compareThroughputChart(runs []*analysis.Result, labels []string) (*builder, error) {
	if err := checkRuns("compare throughput", runs, labels); err != nil {
		return nil, err
	}
	if runs[0].Mode.IsRate() {
		return rateCompareThroughputChart(runs, labels)
	}
	ct := tpsOf(runs[0]) // each run's own throughput (tpsOf(r)); the first names the axis
	b := newBuilder(compareTitle(ct.title+" — comparison", runs), xLabelConcurrency, ct.tokens+" throughput (tokens/s)")
	b.logX = true
	drawn, hadInvalid := false, false
	var knees []plot.Plotter // added after every run's line, so no line covers a marker
	for i, r := range runs {
		ls := sortedLevels(r)
		v, inv := series(ls, concurrency, tpsOf(r).tps)
		drawn = drawn || len(v)+len(inv) > 0
		hi, err := b.addSeries(labels[i], runColor(i), nil, draw.CircleGlyph{}, v, inv)
		if err != nil {
			return nil, err
		}
		hadInvalid = hadInvalid || hi
		k := r.Knee
		if k == nil || !k.Concurrency.OK() || k.Concurrency <= 0 {
			continue
		}
		kc := float64(k.Concurrency)
		name := labels[i] + " knee N≈" + fmtNum(kc) + kneeHow(k, " fit")
		y, ok := onLineLog2(v, kc)
		if !ok {
			b.vline(kc, name+", beyond the measured levels", runColor(i), dashed)
			continue
		}
		s, err := plotter.NewScatter(plotter.XYs{{X: kc, Y: y}})
		if err != nil {
			return nil, fmt.Errorf("plots: compare throughput: knee: %w", err)
		}
		s.Color, s.Shape, s.Radius = runColor(i), draw.PyramidGlyph{}, vg.Points(6)
		knees = append(knees, s)
		b.legend(name+" on the measured line", s)
		b.track([]float64{kc}, []float64{y})
	}
	b.p.Add(knees...)
	if !drawn {
		return b.noData("no data: no run has a measured output throughput")
	}
	return b.finishExcluded(hadInvalid)
}

// onLineLog2 returns the y of the polyline pts (sorted by x > 0) at x, interpolated linearly
// in log2 x between the neighbouring points, which is where the segment drawn on a log2 x
// axis passes; ok is false when x lies outside [pts[0].X, pts[len-1].X].
func onLineLog2(pts plotter.XYs, x float64) (y float64, ok bool) {
	if len(pts) == 0 || !(x > 0) || x < pts[0].X || x > pts[len(pts)-1].X {
		return math.NaN(), false
	}
	for i, p := range pts {
		if x == p.X {
			return p.Y, true
		}
		if i > 0 && x < p.X {
			q := pts[i-1]
			t := math.Log2(x/q.X) / math.Log2(p.X/q.X)
			return q.Y + t*(p.Y-q.Y), true
		}
	}
	return math.NaN(), false
}

// CompareLatency overlays latency against output throughput for several runs: E2E p95 solid
// and TTFT p95 dashed, one colour per run, each level's E2E p95 point (its TTFT p95 point when
// E2E p95 is missing) labelled "N=c" with its concurrency in the run's colour, placed clear
// of the markers and of the labels placed before it (an earlier level of the same run, or
// any level of an earlier run), led out or left out when there is no room (labelPlacer). labels[i] names runs[i]. Arrival-rate runs are drawn
// against the arrival rate instead (DESIGN §5.1); runs of both modes are an error (analysis.SameMode).
func CompareLatency(runs []*analysis.Result, labels []string) (*Figure, error) {
	return plotOf(compareLatencyChart(runs, labels))
}

func compareLatencyChart(runs []*analysis.Result, labels []string) (*builder, error) {
	if err := checkRuns("compare latency", runs, labels); err != nil {
		return nil, err
	}
	if runs[0].Mode.IsRate() {
		return rateCompareLatencyChart(runs, labels)
	}
	b := newBuilder(compareTitle("Latency vs throughput — comparison", runs), tpsOf(runs[0]).tokens+" throughput (tokens/s)", "latency (ms)")
	b.autoLogY = true
	drawn, hadInvalid := false, false
	for i, r := range runs {
		ls := sortedLevels(r)
		tps := tpsOf(r).tps
		d, hi, err := b.addLatencies(ls, tps, []latencySeries{
			{labels[i] + " E2E p95", runColor(i), nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return l.E2E.P95 }},
			{labels[i] + " TTFT p95", runColor(i), dashed, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return l.TTFT.P95 }},
		})
		if err != nil {
			return nil, err
		}
		drawn, hadInvalid = drawn || d, hadInvalid || hi
		b.addLabels(concurrencyLabels(ls, tps, func(l *analysis.Level) analysis.Float { return l.TTFT.P95 }), runColor(i))
	}
	if !drawn {
		return b.noData("no data: no run has both output throughput and latency")
	}
	return b.finishExcluded(hadInvalid)
}

// multi draws several plotters in order.
type multi []plot.Plotter

// Plot implements plot.Plotter.
func (m multi) Plot(c draw.Canvas, p *plot.Plot) {
	for _, q := range m {
		q.Plot(c, p)
	}
}

// addLabels labels the points of lab (already tracked) in colour c, placed when the chart is
// drawn (labelPlacer), after the labels added before.
func (b *builder) addLabels(lab plotter.XYLabels, c color.Color) {
	if b.labels == nil {
		b.labels = &labelPlacer{}
	}
	for i, pt := range lab.XYs {
		b.labels.pts = append(b.labels.pts, labelPoint{x: pt.X, y: pt.Y, text: lab.Labels[i], color: c})
	}
}

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
	return b.finishExcluded(hadInvalid)
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
	return b.finishExcluded(hadInvalid)
}
