package plots

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/record"
)

// rateBuilders are the builders of the arrival-rate charts, by name.
var rateBuilders = map[string]func(*analysis.Result) (*builder, error){
	"rate_throughput": rateThroughputChart, "rate_ttft": func(r *analysis.Result) (*builder, error) {
		return rateLatencyChart(r, "t", "TTFT (ms)", (*analysis.Level).UserTTFT, func(l *analysis.Level) analysis.Float { return l.TTFT.P95 }, "TTFT", sloObjectives(r, "ttft"))
	},
	"rate_e2e": func(r *analysis.Result) (*builder, error) {
		return rateLatencyChart(r, "e", "E2E (ms)", (*analysis.Level).UserE2E, func(l *analysis.Level) analysis.Float { return l.E2E.P95 }, "E2E", sloObjectives(r, "e2e"))
	},
	"rate_lag": rateLagChart,
}

// TestRateChartsRenderEveryFixture renders every chart of an arrival-rate run for every rate
// fixture as SVG (PNG is TestRateGolden's), and keeps the legend clear of the data.
func TestRateChartsRenderEveryFixture(t *testing.T) {
	if got := NamesFor(record.ModeRate); strings.Join(got, ",") != "rate_throughput,rate_ttft,rate_e2e,rate_lag,dashboard" {
		t.Fatalf("NamesFor(rate) = %v", got)
	}
	for _, f := range analysistest.RateFixtures() {
		for _, name := range rateNames {
			c, err := Build(name, f.Result())
			if err != nil {
				t.Fatalf("%s/%s: %v", f.Name, name, err)
			}
			w, h := size(name)
			svg, err := Render(c, w, h, "svg")
			if err != nil {
				t.Fatalf("%s/%s: %v", f.Name, name, err)
			}
			checkSVG(t, svg)
		}
		for name, build := range rateBuilders {
			b, err := build(f.Result())
			if err != nil {
				t.Fatal(err)
			}
			checkLegendClear(t, f.Name+"/"+name, b)
		}
	}
}

// TestRateChartContent: the legends name what the analysis found.
func TestRateChartContent(t *testing.T) {
	for _, tc := range []struct {
		res   func() *analysis.Result
		chart string
		want  []string
	}{
		{analysistest.Rate, "rate_throughput", []string{"Completion rate vs arrival rate", "y = x: every request that arrived completed", "sustainable",
			"unsustainable: backlog grew (above capacity)", "capacity ≈ 20.8 req/s (2667 tok/s)", "capacity 95% interval [19.9, 20.9]",
			"SLO point ≈ 20.6 req/s", "arrival rate, realised (requests/s)", "completed (requests/s)"}},
		{analysistest.Rate, "rate_ttft", []string{"TTFT p50 (from scheduled arrival)", "TTFT p95 from send (the server's view)",
			"SLO: TTFT p95 ≤ 500 ms", "TTFT blow-up ≈ 21.1 req/s (hinge, p50)"}},
		{analysistest.Rate, "rate_e2e", []string{"E2E p99 (from scheduled arrival)", "E2E p95 from send"}},
		{analysistest.Rate, "rate_lag", []string{"lag p50", "lag p99", "lag p99 limit 1 ms (or 1% of TTFT p50)"}},
		{analysistest.RateBeyond, "rate_throughput", []string{"capacity ≥ 22.0 req/s (every level sustained)"}},
		{analysistest.RateOverloaded, "rate_throughput", []string{"capacity ≈ 20.8 req/s, below every level (none sustained)"}},
		{analysistest.RateNoData, "rate_throughput", []string{"no data: no level has a completion rate"}},
	} {
		c, err := Build(tc.chart, tc.res())
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Render(c, testW, testH, "svg")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(svg), xmlEscape(w)) {
				t.Errorf("%s: svg lacks %q", tc.chart, w)
			}
		}
	}
}

// TestRateGolden compares the arrival-rate fixture's charts with testdata/golden (rate_*,
// and its dashboard as rate_dashboard); -update rewrites them.
func TestRateGolden(t *testing.T) {
	for _, name := range rateNames {
		t.Run(name, func(t *testing.T) {
			c, err := Build(name, analysistest.Rate())
			if err != nil {
				t.Fatal(err)
			}
			w, h, file := testW, testH, name
			if name == "dashboard" {
				w, h, file = 2*testW, 2*testH, "rate_dashboard"
			}
			for _, format := range goldenFormats(name) {
				got, err := Render(c, w, h, format)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "golden", file+"."+format), got, format)
			}
		})
	}
}

// TestRateCompare: two arrival-rate runs overlay (each capacity marked); a closed-loop run and
// an arrival-rate one are refused, the error naming both and their modes.
func TestRateCompare(t *testing.T) {
	a, b := analysistest.Rate(), analysistest.RateBeyond()
	files, err := RenderCompare([]*analysis.Result{a, b}, []string{"h100", "a100"})
	if err != nil {
		t.Fatal(err)
	}
	var svg string
	for _, f := range files {
		if f.Format == "svg" {
			checkSVG(t, f.Data)
			svg += string(f.Data)
		}
	}
	for _, w := range []string{"Completion rate vs arrival rate — comparison", "h100 capacity ≈ 20.8 req/s", "a100 capacity ≥ 22.0 req/s (every level sustained)",
		"Latency vs arrival rate — comparison", "h100 TTFT p95", "a100 E2E p95"} {
		if !strings.Contains(svg, xmlEscape(w)) {
			t.Errorf("compare svg lacks %q", w)
		}
	}
	for name, build := range map[string]func([]*analysis.Result, []string) (*builder, error){
		"compare_throughput": compareThroughputChart, "compare_latency": compareLatencyChart} {
		bl, err := build([]*analysis.Result{a, b}, []string{"h100", "a100"})
		if err != nil {
			t.Fatal(err)
		}
		checkLegendClear(t, name, bl)
	}
	_, err = RenderCompare([]*analysis.Result{analysistest.Saturating(), a}, []string{"closed", "open"})
	if err == nil || !strings.Contains(err.Error(), "closed is a closed-loop concurrency sweep (mode concurrency), open an open-loop arrival-rate sweep (mode rate)") {
		t.Errorf("mixed modes: error %v", err)
	}
}
