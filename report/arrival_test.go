package report_test

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// rateCharts are the chart files kneecap analyze hands report.Markdown for an arrival-rate
// run: the dashboard first, then the single charts.
var rateCharts = []string{"dashboard.png", "rate_throughput.png", "rate_ttft.png", "rate_e2e.png", "rate_lag.png"}

// TestGoldenRateReports pins the console summary, report.md and report.html of the
// arrival-rate fixture byte for byte (`go test ./report -run Golden -update` rewrites them).
func TestGoldenRateReports(t *testing.T) {
	var c, m, h bytes.Buffer
	if err := report.Console(&c, analysistest.Rate()); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("rate", "console.txt"), c.Bytes())
	if err := report.Markdown(&m, analysistest.Rate(), rateCharts); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("rate", "report.md"), m.Bytes())
	if err := report.HTML(&h, analysistest.Rate(), nil); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("rate", "report.html"), h.Bytes())
}

// TestRateAnswer: the answer of every rate fixture names the mode in its first sentence and
// states the capacity as the fixture has it; every report renders without NaN and carries
// every warning; the rules are printed in the method table.
func TestRateAnswer(t *testing.T) {
	want := map[string]string{
		"rate":            "the maximum sustainable rate (capacity) is 20.8 requests/s, 2667 output tokens/s (95% interval 19.9–20.9), below the 22.0 requests/s arriving at the last level the backlog test called sustained, which completed 20.4/s; the next, 26.0 requests/s, was not sustained.",
		"rate_beyond":     "every valid level sustained its rate, so the capacity is at least 22.0 requests/s, 2607 output tokens/s, beyond the measured range.",
		"rate_overloaded": "no valid level sustained its offered rate: the capacity is about 20.8 requests/s, 2667 output tokens/s (what the unsustained levels completed) (95% interval up to 26.0), below the first level.",
		"rate_no_data":    "no level is valid: all 2 were excluded from the analysis (see warnings), so there is no capacity or SLO point.",
	}
	for _, f := range analysistest.RateFixtures() {
		t.Run(f.Name, func(t *testing.T) {
			res := f.Result()
			first, head := report.Answer(res)[0], "Open-loop arrival-rate sweep (mode rate): "+want[f.Name]
			if r := res.Rate.CapacityReason; r != "" && res.Rate.CapacityRPS.OK() {
				// The rule states the capacity: the first sentence names the mode, then the rule.
				head = "Open-loop arrival-rate sweep (mode rate). Capacity rule: " + r + "."
			}
			if first != head {
				t.Errorf("first sentence %q", first)
			}
			var c, m, h bytes.Buffer
			if err := report.Console(&c, res); err != nil {
				t.Fatal(err)
			}
			if err := report.Markdown(&m, res, nil); err != nil {
				t.Fatal(err)
			}
			if err := report.HTML(&h, res, nil); err != nil {
				t.Fatal(err)
			}
			for _, w := range res.Warnings {
				mustContain(t, "console", c.String(), w)
				mustContain(t, "html", h.String(), w)
			}
			if strings.Contains(c.String()+m.String()+h.String(), "NaN") {
				t.Error("a null value printed as NaN, want —")
			}
			for _, rule := range []string{"| sustainable | unsustainable when the completions fall short of the window's realised arrivals",
				"| capacity | the maximum sustainable rate", "| capacity interval | 95%: residual bootstrap", "| SLO point | largest (realised) arrival rate"} {
				mustContain(t, "report.md", m.String(), rule)
			}
		})
	}
}

// TestGoldenRateCompare pins compare.md, compare.html and the compare console table of two arrival-rate
// runs under a 10% gate.
func TestGoldenRateCompare(t *testing.T) {
	runs := []*analysis.Result{analysistest.Rate(), analysistest.RateBeyond()}
	labels := []string{"h100", "a100"}
	g := analysis.CompareGate(runs, labels, 0.1)
	var md bytes.Buffer
	if err := report.Compare(&md, runs, labels, []string{"compare_throughput.png", "compare_latency.png"}, &g); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("compare_rate", "compare.md"), md.Bytes())
	var h bytes.Buffer
	if err := report.CompareHTML(&h, runs, labels, nil, &g); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("compare_rate", "compare.html"), h.Bytes())
	checkCompareConsole(t, "compare_rate", runs, labels, &g)
}

// TestCompareRefusesMixedModes: a closed-loop and an arrival-rate run are not compared; the
// error names both runs and their modes.
func TestCompareRefusesMixedModes(t *testing.T) {
	runs := []*analysis.Result{analysistest.Saturating(), analysistest.Rate()}
	err := report.Compare(io.Discard, runs, []string{"closed", "open"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "runs of different modes: closed is a closed-loop concurrency sweep (mode concurrency), open an open-loop arrival-rate sweep (mode rate)") {
		t.Errorf("compare: %v", err)
	}
	if err := report.CompareHTML(io.Discard, runs, []string{"closed", "open"}, nil, nil); err == nil {
		t.Error("compare html of mixed modes: no error")
	}
	if err := report.CompareConsole(io.Discard, runs, []string{"closed", "open"}, nil); err == nil {
		t.Error("compare console of mixed modes: no error")
	}
}
