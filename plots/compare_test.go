package plots

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// Reference values from the simulator's ground truth (analysistest, DESIGN §6):
// TPS(c) = c ÷ (4 ms + 0.25 ms × c) up to 32 slots, so TPS(16) = 2000, TPS(32) = 2666.67 and
// TPS(24) = 2400 tokens/s.
const (
	tps16 = 16 / 0.008
	tps32 = 32 / 0.012
)

func TestOnLineLog2(t *testing.T) {
	line := plotter.XYs{{X: 1, Y: 250}, {X: 16, Y: tps16}, {X: 32, Y: tps32}, {X: 64, Y: tps32}}
	for _, tc := range []struct {
		name   string
		pts    plotter.XYs
		x      float64
		want   float64
		wantOK bool
	}{
		// log2(22.6/16) = 0.49825 of the way from 2000 to 2666.67.
		{"between levels", line, 22.6, 2332.167245, true},
		// Halfway in log2 between 16 and 32 is √(16·32) = 22.63, not the arithmetic 24.
		{"log2 midpoint", line, math.Sqrt(16 * 32), (tps16 + tps32) / 2, true},
		{"on a level", line, 32, tps32, true},
		{"first level", line, 1, 250, true},
		{"last level", line, 64, tps32, true},
		{"below the levels", line, 0.5, math.NaN(), false},
		{"above the levels", line, 65, math.NaN(), false},
		{"zero", line, 0, math.NaN(), false},
		{"NaN", line, math.NaN(), math.NaN(), false},
		{"one point, on it", plotter.XYs{{X: 8, Y: 1}}, 8, 1, true},
		{"one point, off it", plotter.XYs{{X: 8, Y: 1}}, 9, math.NaN(), false},
		{"no points", nil, 8, math.NaN(), false},
	} {
		got, ok := onLineLog2(tc.pts, tc.x)
		if ok != tc.wantOK || ok && math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: onLineLog2(%g) = %g, %v; want %g ± 1e-6, %v", tc.name, tc.x, got, ok, tc.want, tc.wantOK)
		}
	}
}

// tracked counts the points b tracked at (x, y), within 1e-6 relative.
func tracked(b *builder, x, y float64) int {
	n := 0
	for i := range b.xs {
		if math.Abs(b.xs[i]-x) <= 1e-6*x && math.Abs(b.ys[i]-y) <= 1e-6*math.Abs(y) {
			n++
		}
	}
	return n
}

func renderSVG(t *testing.T, b *builder, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Render(b.figure(), Width, Height, "svg")
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg)
	return string(svg)
}

// TestCompareKneeOnMeasuredLine: the knee triangle was drawn at the fitted (knee, TPS), off
// the measured line, with no fitted curve on the chart. It now sits on the measured line.
func TestCompareKneeOnMeasuredLine(t *testing.T) {
	sat, lin := analysistest.Saturating(), analysistest.TwentyLevels()
	b, err := compareThroughputChart([]*analysis.Result{sat, lin}, []string{"h100", "a100"})
	svg := renderSVG(t, b, err)
	for _, tc := range []struct {
		run          string
		x, want, fit float64
		n            int // points tracked at (x, want): the marker, and the level under it
		legend       string
	}{
		// Saturating: knee 32.6 between the levels 32 and 64, where the measured line is flat
		// at TPS(32); fitted TPS 2683.
		{"h100", 32.6, tps32, 2683, 1, "h100 knee N≈32.6 (batch fit, plateau onset) on the measured line"},
		// TwentyLevels (8, 16, 24, …): knee 24 on the level 24, TPS(24) = 24 ÷ 10 ms; fitted 2550.
		{"a100", 24, 2400, 2550, 2, "a100 knee N≈24.0 (hinge fit, plateau onset) on the measured line"},
	} {
		if got := tracked(b, tc.x, tc.want); got != tc.n {
			t.Errorf("%s: %d points at (%g, %g), want %d (knee marker on the measured line)", tc.run, got, tc.x, tc.want, tc.n)
		}
		if tracked(b, tc.x, tc.fit) > 0 {
			t.Errorf("%s: a knee marker at the fitted (%g, %g), off the measured line", tc.run, tc.x, tc.fit)
		}
		if !strings.Contains(svg, xmlEscape(tc.legend)) {
			t.Errorf("svg lacks the legend entry %q", tc.legend)
		}
	}
}

// TestCompareKneeBeyondLevels: a knee outside a run's valid levels cannot be placed on its
// line; it is a vertical line in the run's colour that says so. No knee, no entry.
func TestCompareKneeBeyondLevels(t *testing.T) {
	for _, knee := range []analysis.Float{4, 200} {
		lin := analysistest.TwentyLevels() // valid levels 8 … 160
		lin.Knee.Concurrency = knee
		noKnee := analysistest.Saturating()
		noKnee.Knee = nil
		b, err := compareThroughputChart([]*analysis.Result{lin, noKnee}, []string{"a100", "l4"})
		svg := renderSVG(t, b, err)
		want := "a100 knee N≈" + fmtNum(float64(knee)) + " (hinge fit, plateau onset), beyond the measured levels"
		if !strings.Contains(svg, xmlEscape(want)) {
			t.Errorf("knee %g: svg lacks %q", knee, want)
		}
		if strings.Contains(svg, "on the measured line") || strings.Contains(svg, "l4 knee") {
			t.Errorf("knee %g: a knee marker drawn on a line, or for the run without a knee", knee)
		}
		if len(b.xOnly) != 1 || b.xOnly[0] != float64(knee) {
			t.Errorf("knee %g: x range widened by %v, want [%g]", knee, b.xOnly, knee)
		}
	}
}

// slower is r as measured on a slower accelerator: output TPS × tps, latencies × lat, the knee
// at the same concurrency on the scaled curve.
func slower(r *analysis.Result, tps, lat float64) *analysis.Result {
	scale := func(l *analysis.Latency) {
		for _, v := range []*analysis.Float{&l.Mean, &l.P50, &l.P90, &l.P95, &l.P99} {
			*v *= analysis.Float(lat)
		}
	}
	for i := range r.Levels {
		l := &r.Levels[i]
		l.OutputTPS *= analysis.Float(tps)
		l.OutputTPSCI95 *= analysis.Float(tps)
		scale(&l.TTFT)
		scale(&l.E2E)
	}
	r.Throughput.MaxTPS *= analysis.Float(tps)
	if r.Knee != nil {
		r.Knee.TPS *= analysis.Float(tps)
	}
	return r
}

// TestCompareLatencyLabels: each E2E p95 point is labelled N=c in its run's colour.
func TestCompareLatencyLabels(t *testing.T) {
	b, err := compareLatencyChart([]*analysis.Result{analysistest.Saturating(), slower(analysistest.TwentyLevels(), 0.6, 3)}, []string{"h100", "a100"})
	svg := renderSVG(t, b, err)
	// Tableau blue for run 0, orange for run 1 (runColors); the second run's latencies are 3×
	// the first's, so its labels lie clear of the first's.
	for _, want := range []string{"fill:#1F77B4\">N=1</text>", "fill:#1F77B4\">N=16</text>", "fill:#FF7F0E\">N=8</text>", "fill:#FF7F0E\">N=16</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks the label %s", want)
		}
	}
}

// TestCompareLatencyLabelsApart: where two runs' points coincide, the second run's labels
// take the free places around the first's: no two labels overlap (checkLabels).
func TestCompareLatencyLabelsApart(t *testing.T) {
	run := func() *analysis.Result {
		r := analysistest.Base([]int{1, 2, 4})
		// N=2 lies 1 tok/s and 1 ms from N=1, well inside an 8 pt label; N=4 is far.
		for i, v := range [][2]float64{{1000, 100}, {1001, 101}, {2000, 100}} {
			l := &r.Levels[i]
			l.OutputTPS, l.E2E.P95, l.TTFT.P95 = analysis.Float(v[0]), analysis.Float(v[1]), 50
		}
		return r
	}
	f, err := CompareLatency([]*analysis.Result{run(), run()}, []string{"h100", "a100"})
	if err != nil {
		t.Fatal(err)
	}
	checkLabels(t, "coinciding runs", f, Width, Height)
	// Four labels around the coinciding N=1 and N=2, two around N=4: there is room for all.
	if lp := f.labels; len(lp.placed) != 6 {
		t.Errorf("%d labels placed, %q dropped; want all 6 placed", len(lp.placed), lp.dropped)
	}
}

// TestCompareLegendClear: no point (knee markers included) lies under the legend.
func TestCompareLegendClear(t *testing.T) {
	fs := analysistest.Fixtures()
	for i := range fs {
		for _, other := range []func() *analysis.Result{analysistest.Saturating, analysistest.TwentyLevels} {
			r := fs[i].Result()
			if r == nil {
				continue
			}
			runs, labels := []*analysis.Result{r, other()}, []string{fs[i].Name, "other"}
			for name, build := range map[string]func([]*analysis.Result, []string) (*builder, error){
				"compare_throughput": compareThroughputChart, "compare_latency": compareLatencyChart,
			} {
				b, err := build(runs, labels)
				if err != nil {
					t.Fatal(err)
				}
				checkLegendClear(t, fs[i].Name+"/"+name, b)
			}
		}
	}
}

// compareCharts are the comparison charts of the saturating fixture and the linear-plan one
// as if measured on a slower accelerator (60% of the throughput, 1.5× the latency).
func compareCharts(t *testing.T) map[string]Chart {
	t.Helper()
	runs := []*analysis.Result{analysistest.Saturating(), slower(analysistest.TwentyLevels(), 0.6, 1.5)}
	labels := []string{"h100", "a100"}
	tp, err := CompareThroughput(runs, labels)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := CompareLatency(runs, labels)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Chart{"compare_throughput": tp, "compare_latency": lat}
}

func TestCompareDeterministicSVG(t *testing.T) {
	a, b := compareCharts(t), compareCharts(t)
	for name := range a {
		sa, err := Render(a[name], Width, Height, "svg")
		if err != nil {
			t.Fatal(err)
		}
		sb, err := Render(b[name], Width, Height, "svg")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sa, sb) {
			t.Errorf("%s: two renderings of the same runs differ", name)
		}
	}
}

// TestCompareGolden compares the comparison charts, at their file size, with
// testdata/golden/compare_*.{svg,png} as TestGolden does. Regenerate with
// `go test ./plots -run TestCompareGolden -update` and look at the images before committing.
func TestCompareGolden(t *testing.T) {
	for name, c := range compareCharts(t) {
		for _, format := range goldenFormats(name) {
			got, err := Render(c, Width, Height, format)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "golden", name+"."+format), got, format)
		}
	}
}
