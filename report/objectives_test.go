package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// renderAll returns the console summary, report.md and report.html of res.
func renderAll(t *testing.T, res *analysis.Result) map[string]string {
	t.Helper()
	var c, m, h bytes.Buffer
	if err := report.Console(&c, res); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&m, res, reportCharts); err != nil {
		t.Fatal(err)
	}
	if err := report.HTML(&h, res, nil); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"console": c.String(), "report.md": m.String(), "report.html": h.String()}
}

// checkSays fails unless every output has every want and none of not.
func checkSays(t *testing.T, outs map[string]string, want, not []string) {
	t.Helper()
	for name, s := range outs {
		for _, w := range want {
			if !strings.Contains(s, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
		for _, w := range not {
			if strings.Contains(s, w) {
				t.Errorf("%s has %q", name, w)
			}
		}
	}
}

// A sweep analyzed under SLOs off p95 (TTFT p99, ITL p50) names them and the one that binds;
// it does not say no SLO was set.
func TestReportsNameObjectives(t *testing.T) {
	checkSays(t, renderAll(t, analysistest.Objectives()),
		[]string{"The SLO (TTFT p99 ≤ 2000 ms, ITL p50 ≤ 30.0 ms) holds up to concurrency 52.7", "TTFT p99 binds"},
		[]string{"No SLO was set", "no SLO set", "TPOT p95 ≤"})
}

// An objective checked at a higher percentile (no level reports its own) is named, saying
// so, and the binding SLO is named by the percentile checked; one no level reports is not
// named as holding.
func TestReportsCheckedAtHigherPercentile(t *testing.T) {
	res := analysistest.Saturating()
	res.SLO.TTFTP95MS = analysis.NaN()
	res.SLO.Objectives = []analysis.SLOObjective{
		{Name: "ttft_p95", Metric: "ttft", Percentile: 95, MaxMS: 2000, CheckedAs: "ttft_p99"},
		{Name: "tpot_p95", Metric: "tpot", Percentile: 95, MaxMS: 50},
		{Name: "itl_p50", Metric: "itl", Percentile: 50, MaxMS: 30},
	}
	res.SLO.Checked, res.SLO.Limit = []string{"ttft_p99", "tpot_p95"}, "ttft_p99"
	checkSays(t, renderAll(t, res),
		[]string{"The SLO (TTFT p95 ≤ 2000 ms (checked at p99), TPOT p95 ≤ 50.0 ms) holds", "TTFT p99 binds"},
		[]string{"ITL p50 ≤"})
}

// An arrival-rate run names its objectives off p95 too.
func TestRateReportsNameObjectives(t *testing.T) {
	res := analysistest.Rate()
	res.SLO.TTFTP95MS, res.SLO.TPOTP95MS = analysis.NaN(), analysis.NaN()
	res.SLO.Objectives = []analysis.SLOObjective{{Name: "ttft_p99", Metric: "ttft", Percentile: 99, MaxMS: 500}}
	res.SLO.Checked, res.SLO.Limit = []string{"ttft_p99"}, "ttft_p99"
	checkSays(t, renderAll(t, res),
		[]string{"The SLO (TTFT p99 ≤ 500 ms) holds up to", "TTFT p99 binds"},
		[]string{"No SLO was set", "no SLO set"})
}
