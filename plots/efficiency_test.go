package plots

import (
	"slices"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestEfficiencyWrittenWithEnergy: RenderAll renders the efficiency chart, last, for a run
// with energy answers (closed loop and arrival rate), and not for the same runs without
// (chartsOf, the list RenderAll renders; TestRenderAll renders it).
func TestEfficiencyWrittenWithEnergy(t *testing.T) {
	for _, f := range []struct {
		name         string
		with, simple func() *analysis.Result
	}{
		{"closed", analysistest.WithEnergy, analysistest.Saturating},
		{"rate", analysistest.RateWithEnergy, analysistest.Rate},
	} {
		with := f.with()
		if got, want := chartsOf(with), append(NamesFor(with.Mode), "efficiency"); !slices.Equal(got, want) {
			t.Errorf("%s with energy: renders %v, want %v", f.name, got, want)
		}
		if got := chartsOf(f.simple()); slices.Contains(got, "efficiency") {
			t.Errorf("%s without energy: renders %v, with an efficiency chart", f.name, got)
		}
	}
}

// efficiencySVG renders res's efficiency chart as SVG at its file size.
func efficiencySVG(t *testing.T, res *analysis.Result) string {
	t.Helper()
	c, err := Build("efficiency", res)
	if err != nil {
		t.Fatal(err)
	}
	w, h := size("efficiency")
	b, err := Render(c, w, h, "svg")
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b)
	return string(b)
}

// TestEfficiencyContent: the chart's panels, axes and marks are labelled with the fixtures'
// figures (analysistest.WithEnergy and RateWithEnergy: the simulator's power model).
func TestEfficiencyContent(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *analysis.Result
		want []string
	}{
		{"closed", analysistest.WithEnergy(), []string{"Energy per output token", "GPU power (1 GPU)",
			"meta-llama/Llama-3.1-8B-Instruct", "concurrency (requests in flight, log2 scale)", "energy per output token (J)",
			"GPU power, all GPUs counted (W)", "energy optimum N≈10.3: 0.196 J/token (lowest)", "energy optimum 95% interval [8.90, 12.1]",
			"knee N≈32.6: 0.263 J/token", "SLO point N≈45.3: 0.263 J/token", "J per output token above idle power",
			"idle 120 W (before the first level)", "GPU power, mean", "hollow: excluded level"}},
		{"rate", analysistest.RateWithEnergy(), []string{"arrival rate, realised (requests/s)",
			"energy optimum ≈ 12.0 req/s: 0.205 J/token (lowest)", "capacity ≈ 20.8 req/s: 0.249 J/token", "SLO point ≈ 20.6 req/s: 0.249 J/token"}},
	} {
		s := efficiencySVG(t, tc.res)
		for _, w := range tc.want {
			if !strings.Contains(s, xmlEscape(w)) {
				t.Errorf("%s: svg lacks %q", tc.name, w)
			}
		}
	}
}

// TestEfficiencyPlacesLevels: one point per level with GPU figures, at its place on the load
// axis and its J per output token; a level without them is left out, and a run whose levels
// have none says so.
func TestEfficiencyPlacesLevels(t *testing.T) {
	res := analysistest.WithEnergy()
	res.Levels[0].GPU = nil
	b, err := energyChart(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Levels[1:] {
		if tracked(b, float64(l.Concurrency), float64(l.GPU.JPerOutputToken)) == 0 {
			t.Errorf("level %d: no point at (%d, %g)", l.Concurrency, l.Concurrency, float64(l.GPU.JPerOutputToken))
		}
	}
	if n := tracked(b, 1, float64(analysistest.WithEnergy().Levels[0].GPU.JPerOutputToken)); n != 0 {
		t.Errorf("level 1 has no GPU figures but %d point(s) were drawn for it", n)
	}
	checkLegendClear(t, "energy", b)
	for i := range res.Levels {
		res.Levels[i].GPU = nil
	}
	if s := efficiencySVG(t, res); !strings.Contains(s, "no data: no level has GPU energy figures") {
		t.Error("a run without GPU figures does not say so")
	}
}
