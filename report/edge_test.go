package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/summary"
)

// analyzeCSV runs what `kneecap analyze FILE.csv` runs (summary.ReadCSV, Analyze with the default
// options) and returns the console summary and report.md.
func analyzeCSV(t *testing.T, csv string) (console, md string) {
	t.Helper()
	levels, err := summary.ReadCSV(strings.NewReader(csv), "edge.csv")
	if err != nil {
		t.Fatal(err)
	}
	opts := analysis.DefaultOptions()
	opts.Bootstrap = 0
	res := analysis.Analyze(levels, analysis.Meta{Name: "edge"}, opts)
	var c, m bytes.Buffer
	if err := report.Console(&c, &res); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&m, &res, nil); err != nil {
		t.Fatal(err)
	}
	return c.String(), m.String()
}

func mustNotContain(t *testing.T, what, doc string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(doc, b) {
			t.Errorf("%s contains %q:\n%s", what, b, doc)
		}
	}
}

// A table that reports TTFT p50 but no p95 or TPOT cannot be checked against the default SLO
// (TTFT p95 ≤ 2 s, TPOT p95 ≤ 50 ms). The answer said "Not even the first level meets the
// SLO", which the numbers do not show; a first level that does miss it still says so.
func TestAnswerSLONotChecked(t *testing.T) {
	c, m := analyzeCSV(t, "concurrency,output_tps,ttft_p50_ms\n1,100,20\n2,190,21\n")
	for what, doc := range map[string]string{"console": c, "report.md": m} {
		mustContain(t, what, doc, "The SLO (TTFT p95 ≤ 2000 ms, TPOT p95 ≤ 50.0 ms) could not be checked against any level (see warnings).")
		mustNotContain(t, what, doc, "Not even the first level")
	}
	// TPOT p95 is set (the default) but no level reports it: it is not named as an SLO the
	// levels were checked against (a warning says it was ignored).
	c, _ = analyzeCSV(t, "concurrency,output_tps,ttft_p95_ms\n1,100,2500\n2,190,2600\n")
	mustContain(t, "console", c, "Not even the first level meets the SLO (TTFT p95 ≤ 2000 ms); TTFT p95 binds.",
		"tpot_p95 is set but no valid level reports it: ignored")
	c, _ = analyzeCSV(t, "concurrency,output_tps,ttft_p95_ms\n1,100,20\n2,190,26\n4,360,30\n")
	mustContain(t, "console", c, "The SLO (TTFT p95 ≤ 2000 ms) holds at every valid level")
}

// Every level invalid (50–100% errors, the count not reported): the answer said "No level
// has a measured output throughput" above a table of throughputs, and the errors column
// said 0 beside a 50% error rate.
func TestAnswerAllLevelsInvalid(t *testing.T) {
	c, m := analyzeCSV(t, "concurrency,output_tps,ttft_p50_ms,error_rate\n1,100,20,0.5\n2,200,20,0.5\n4,400,25,1\n8,700,40,1\n")
	for what, doc := range map[string]string{"console": c, "report.md": m} {
		mustContain(t, what, doc, "No level is valid: all 4 were excluded from the analysis (see warnings)")
		mustNotContain(t, what, doc, "No level has a measured output throughput")
	}
	// The console row of concurrency 1: N, requests (not reported: 0), error rate, tok/s.
	mustContain(t, "console", c, "     1      0   50.0%     100 ")
	mustContain(t, "report.md", m, "| 1 | 0 | 50.0% | 100 |")
}

// An SLO point interpolated on log concurrency onto a level (exp(log 64) = 63.99999999999998)
// is that level: "concurrency 64", not "64.0". TTFT p95 is exactly 2000 ms at 64 here.
func TestAnswerSLOPointOnALevel(t *testing.T) {
	c, _ := analyzeCSV(t, "concurrency,output_tps,ttft_p95_ms,tpot_p95_ms\n"+
		"1,100,25,10\n2,195,26,10\n4,380,27,11\n8,700,30,12\n16,1100,50,14\n32,1000,400,20\n64,700,2000,40\n128,400,5000,60\n")
	mustContain(t, "console", c, "holds up to concurrency 64 (measured: 64 meets it, 128 does not) with 700 tokens/s; TTFT p95 binds first.")
	// The SLO point is an upper bound, rounded down: never shown as the failing level.
	// 101.75 (exp of the log interpolation) between 64 and 102 reads 101; 31.988 between 16
	// and 32 reads 31.9; 101.988 between 64 and 102 reads 101; 2·2^(500/1100) = 2.7406 reads 2.74.
	for _, tc := range []struct{ csv, want string }{
		{"1,100,25\n8,700,30\n64,2400,867\n102,2400,2006\n", "holds up to concurrency 101 (measured: 64 meets it, 102 does not)"},
		{"1,100,25\n16,1400,100\n32,2400,2001\n", "holds up to concurrency 31.9 (measured: 16 meets it, 32 does not)"},
		{"1,100,25\n64,2400,20\n102,2400,2000.5\n", "holds up to concurrency 101 (measured: 64 meets it, 102 does not)"},
		{"1,100,25\n2,190,1500\n4,380,2600\n", "holds up to concurrency 2.74 (measured: 2 meets it, 4 does not)"},
	} {
		c, _ = analyzeCSV(t, "concurrency,output_tps,ttft_p95_ms\n"+tc.csv)
		mustContain(t, "console", c, tc.want)
	}
}

// A throughput that never saturates: the fitted models say that the USL has no peak and that
// the batch limit and hinge breakpoint sit at the largest level, where no plateau was
// measured; before, "peak N* = —, X(N*) = — tokens/s" and "plateau 6400 tokens/s".
func TestFitNotesNeverSaturating(t *testing.T) {
	var b strings.Builder
	b.WriteString("concurrency,output_tps,ttft_p50_ms\n")
	for c := 1; c <= 64; c *= 2 {
		b.WriteString(fmt.Sprintf("%d,%d,20\n", c, 100*c))
	}
	_, m := analyzeCSV(t, b.String())
	mustContain(t, "report.md", m, `no peak N\* (N\* = √((1 − σ) ÷ κ) needs κ &gt; 0 and σ &lt; 1)`,
		"plateau X(S) = 6400 tokens/s (at the largest valid level: no plateau was measured)",
		"hinge: breakpoint 64.0, plateau 6400 tokens/s (at the largest valid level: no plateau was measured)")
	mustNotContain(t, "report.md", m, `X(N\*) = — tokens/s`, "Kneedle: knee")
}

// Every valid level meets the SLO (TTFT p95 ≤ 2 s, TPOT p95 ≤ 50 ms: the largest here are
// 40 ms and 14 ms). Analysis sets slo.max_concurrency to the largest level, 64, and leaves
// slo.limit empty; the answer said "holds up to concurrency 64", as if 64 were the limit.
func TestAnswerSLOBeyondRange(t *testing.T) {
	c, m := analyzeCSV(t, "concurrency,output_tps,ttft_p95_ms,tpot_p95_ms\n"+
		"1,100,25,10\n2,195,26,10\n4,380,27,11\n8,700,30,12\n16,1100,33,13\n32,1400,36,14\n64,1500,40,14\n")
	for what, doc := range map[string]string{"console": c, "report.md": m} {
		mustContain(t, what, doc, "The SLO (TTFT p95 ≤ 2000 ms, TPOT p95 ≤ 50.0 ms) holds at every valid level, so the SLO point is ≥ 64, beyond the measured range; at concurrency 64: 1500 tokens/s.",
			"the limit lies beyond concurrency 64")
		mustNotContain(t, what, doc, "holds up to concurrency 64", "binds first")
	}
}
