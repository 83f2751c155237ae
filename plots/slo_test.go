package plots

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// chartSVG renders the chart name of res as SVG text.
func chartSVG(t *testing.T, name string, res *analysis.Result) string {
	t.Helper()
	c, err := Build(name, res)
	if err != nil {
		t.Fatal(err)
	}
	w, h := size(name)
	svg, err := Render(c, w, h, "svg")
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg)
	return string(svg)
}

// hasText reports whether svg s has a text element (a legend entry) reading exactly text.
func hasText(s, text string) bool { return strings.Contains(s, ">"+xmlEscape(text)+"</text>") }

// An SLO off p95 is drawn on its metric's chart, labelled with its percentile, beside the
// series of that percentile (ITL p50 added to the TPOT chart, which draws only ITL p99);
// no p95 line is drawn that was not set.
func TestObjectiveLines(t *testing.T) {
	res := analysistest.Objectives()
	for _, tc := range []struct {
		chart     string
		want, not []string
	}{
		{"ttft", []string{"SLO: TTFT p99 ≤ 2000 ms", "TTFT p99"}, []string{"SLO: TTFT p95"}},
		{"tpot", []string{"SLO: ITL p50 ≤ 30.0 ms (ITL only; TPOT has no SLO)", "ITL p50"}, []string{"SLO: TPOT", "ITL has no SLO"}},
		{"latency_vs_throughput", nil, []string{"SLO:"}},
		{"dashboard", []string{"SLO: TTFT p99 ≤ 2000 ms", "SLO: ITL p50 ≤ 30.0 ms (ITL only; TPOT has no SLO)"}, nil},
	} {
		s := chartSVG(t, tc.chart, res)
		for _, w := range tc.want {
			if !hasText(s, w) {
				t.Errorf("%s: svg lacks %q", tc.chart, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(s, xmlEscape(w)) {
				t.Errorf("%s: svg has %q", tc.chart, w)
			}
		}
	}
}

// Objectives on both TPOT and ITL say which each is on; a p99 one adds its series; an E2E
// one is drawn on the latency-vs-throughput chart; one checked at a higher percentile says so.
func TestObjectiveLinesLabels(t *testing.T) {
	res := analysistest.Saturating()
	res.SLO.Objectives = []analysis.SLOObjective{
		{Name: "ttft_p95", Metric: "ttft", Percentile: 95, MaxMS: 2000, CheckedAs: "ttft_p99"},
		{Name: "tpot_p99", Metric: "tpot", Percentile: 99, MaxMS: 40},
		{Name: "itl_p95", Metric: "itl", Percentile: 95, MaxMS: 60},
		{Name: "e2e_p99", Metric: "e2e", Percentile: 99, MaxMS: 9000},
	}
	for chart, want := range map[string][]string{
		"ttft":                  {"SLO: TTFT p95 ≤ 2000 ms (checked at p99)"},
		"tpot":                  {"SLO: TPOT p99 ≤ 40.0 ms (TPOT only)", "TPOT p99", "SLO: ITL p95 ≤ 60.0 ms (ITL only)", "ITL p95"},
		"latency_vs_throughput": {"SLO: E2E p99 ≤ 9000 ms", "E2E p99"},
	} {
		s := chartSVG(t, chart, res)
		for _, w := range want {
			if !hasText(s, w) {
				t.Errorf("%s: svg lacks %q", chart, w)
			}
		}
		if strings.Contains(s, "has no SLO") {
			t.Errorf("%s: says a metric with an SLO has none", chart)
		}
	}
}

// The rate charts draw the TTFT and E2E objectives at their percentiles.
func TestRateObjectiveLines(t *testing.T) {
	res := analysistest.Rate()
	res.SLO.TTFTP95MS = analysis.NaN()
	res.SLO.Objectives = []analysis.SLOObjective{
		{Name: "ttft_p99", Metric: "ttft", Percentile: 99, MaxMS: 500},
		{Name: "e2e_p50", Metric: "e2e", Percentile: 50, MaxMS: 3000},
	}
	for chart, want := range map[string]string{"rate_ttft": "SLO: TTFT p99 ≤ 500 ms", "rate_e2e": "SLO: E2E p50 ≤ 3000 ms"} {
		s := chartSVG(t, chart, res)
		if !hasText(s, want) {
			t.Errorf("%s: svg lacks %q", chart, want)
		}
		if strings.Contains(s, xmlEscape("p95 ≤")) {
			t.Errorf("%s: draws a p95 SLO that is not set", chart)
		}
	}
}
