package plots

import (
	"fmt"

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
	if len(labels) != len(runs) {
		return fmt.Errorf("plots: %s: %d labels for %d runs", op, len(labels), len(runs))
	}
	for i, r := range runs {
		if r == nil {
			return fmt.Errorf("plots: %s: run %q is nil", op, labels[i])
		}
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
// axis), one colour per run, each run's knee marked with a large triangle on its
// curve. labels[i] names runs[i].
func CompareThroughput(runs []*analysis.Result, labels []string) (*plot.Plot, error) {
	return plotOf(compareThroughputChart(runs, labels))
}

func compareThroughputChart(runs []*analysis.Result, labels []string) (*builder, error) {
	if err := checkRuns("compare throughput", runs, labels); err != nil {
		return nil, err
	}
	b := newBuilder(compareTitle("Output throughput — comparison", runs), xLabelConcurrency, "output throughput (tokens/s)")
	b.logX = true
	drawn, hadInvalid := false, false
	for i, r := range runs {
		ls := sortedLevels(r)
		v, inv := series(ls, concurrency, outputTPS)
		drawn = drawn || len(v)+len(inv) > 0
		hi, err := b.addSeries(labels[i], runColor(i), nil, draw.CircleGlyph{}, v, inv)
		if err != nil {
			return nil, err
		}
		hadInvalid = hadInvalid || hi
		if k := r.Knee; k != nil && k.Concurrency.OK() && k.TPS.OK() && k.Concurrency > 0 {
			s, err := plotter.NewScatter(plotter.XYs{{X: float64(k.Concurrency), Y: float64(k.TPS)}})
			if err != nil {
				return nil, fmt.Errorf("plots: compare throughput: knee: %w", err)
			}
			s.Color, s.Shape, s.Radius = runColor(i), draw.PyramidGlyph{}, vg.Points(6)
			b.p.Add(s)
			b.legend(fmt.Sprintf("%s knee N≈%s", labels[i], fmtNum(float64(k.Concurrency))), s)
			b.track([]float64{float64(k.Concurrency)}, []float64{float64(k.TPS)})
		}
	}
	if !drawn {
		return b.noData("no data: no run has a measured output throughput")
	}
	if hadInvalid {
		b.addExcludedLegend()
	}
	return b.finish()
}

// CompareLatency overlays latency against output throughput for several runs: E2E p95 solid
// and TTFT p95 dashed, one colour per run. labels[i] names runs[i].
func CompareLatency(runs []*analysis.Result, labels []string) (*plot.Plot, error) {
	return plotOf(compareLatencyChart(runs, labels))
}

func compareLatencyChart(runs []*analysis.Result, labels []string) (*builder, error) {
	if err := checkRuns("compare latency", runs, labels); err != nil {
		return nil, err
	}
	b := newBuilder(compareTitle("Latency vs throughput — comparison", runs), "output throughput (tokens/s)", "latency (ms)")
	b.autoLogY = true
	drawn, hadInvalid := false, false
	for i, r := range runs {
		d, hi, err := b.addLatencies(sortedLevels(r), outputTPS, []latencySeries{
			{labels[i] + " E2E p95", runColor(i), nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return l.E2E.P95 }},
			{labels[i] + " TTFT p95", runColor(i), dashed, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return l.TTFT.P95 }},
		})
		if err != nil {
			return nil, err
		}
		drawn, hadInvalid = drawn || d, hadInvalid || hi
	}
	if !drawn {
		return b.noData("no data: no run has both output throughput and latency")
	}
	if hadInvalid {
		b.addExcludedLegend()
	}
	return b.finish()
}
