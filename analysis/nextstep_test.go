package analysis_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// noAnswer matches the warnings that say an answer was not found (issue 22: every "no
// answer" ends with the next step, the command or setting that would give one).
var noAnswer = regexp.MustCompile(`^(no valid levels|too few valid levels|no knee|no efficient point|no TTFT blow-up|slo: .*no SLO point|slo: every valid level meets|knee: none|slo: no usable SLO|capacity: every valid level sustained|capacity: even the first)`)

// TestNoAnswerHasNextStep analyzes the shapes that leave an answer out — every level excluded
// (each reason), too few levels, a curve still rising, flat TTFT, an SLO met everywhere or
// missed from the first level — and checks that each warning saying so names the next step.
func TestNoAnswerHasNextStep(t *testing.T) {
	levels := func(cs ...int) []analysis.Level {
		var out []analysis.Level
		for _, c := range cs {
			out = append(out, analysistest.Level(c))
		}
		return out
	}
	excluded := func(note string, cs ...int) []analysis.Level {
		out := levels(cs...)
		for i := range out {
			out[i].Valid, out[i].Notes = false, []string{"invalid: " + note}
		}
		return out
	}
	strict := analysis.DefaultOptions()
	strict.SLO.TTFTP95 = 1 // ms-scale: every level misses it
	cases := []struct {
		name   string
		levels []analysis.Level
		opts   analysis.Options
		want   string // a part of the next step
	}{
		{"client-bound", excluded("client-bound: client effect on TTFT p95 3.0%, offered load 1.2% > tolerance 1.0% (…)", 1, 2, 4), analysis.DefaultOptions(), "--shard"},
		{"client-bound by the load alone", excluded("client-bound: client effect on offered load 1.3%, throughput 1.3% > tolerance 1.0% (…)", 1, 2, 4),
			analysis.DefaultOptions(), "longer requests (more output tokens)"},
		{"marked invalid", excluded("marked invalid in levels.csv", 1, 2, 4), analysis.DefaultOptions(), "see why each level was excluded"},
		{"no SLO", levels(1, 2, 4), analysis.Options{KneeGain: 0.1}, "--slo ttft:p99:2s"},
		{"not steady", excluded("not steady: the steady-state test failed", 1, 2, 4), analysis.DefaultOptions(), "--max-duration"},
		{"errors", excluded("error rate 9.0% > 5.0%", 1, 2, 4), analysis.DefaultOptions(), "error_classes"},
		{"too few", levels(1, 2), analysis.DefaultOptions(), "--levels"},
		{"still rising", levels(1, 2, 4, 8), analysis.DefaultOptions(), "add 16 and 32 to --levels"},
		{"slo beyond", levels(1, 2, 4, 8, 16, 32), analysis.DefaultOptions(), "past 32"},
		{"slo first misses", levels(2, 4, 8, 16), strict, "add 1 to --levels"},
	}
	for _, rate := range []*analysis.Result{analysistest.RateBeyond(), analysistest.RateOverloaded()} {
		cases = append(cases, struct {
			name   string
			levels []analysis.Level
			opts   analysis.Options
			want   string
		}{"rate " + rate.Meta.Name, rate.Levels, analysis.DefaultOptions(), "--rates"})
	}
	for _, c := range cases {
		c.opts.Bootstrap = 0
		res := analysis.Analyze(c.levels, analysis.Meta{}, c.opts)
		found := false
		for _, w := range res.Warnings {
			if !noAnswer.MatchString(w) {
				continue
			}
			found = true
			if !strings.Contains(w, "Next: ") {
				t.Errorf("%s: %q names no next step", c.name, w)
			}
		}
		if all := strings.Join(res.Warnings, "\n"); !found || !strings.Contains(all, c.want) {
			t.Errorf("%s: warnings %q: want a no-answer warning whose next step has %q", c.name, res.Warnings, c.want)
		}
	}
}

// TestKneeUndefinedR2: a curve already flat at its first level (the saturating fixture from
// concurrency 64) leaves the batch model's R² undefined; the warning says so instead of "fits
// with R² — only (< 0.95)", which reads as a number that is missing.
func TestKneeUndefinedR2(t *testing.T) {
	t.Parallel()
	opts := analysis.DefaultOptions()
	opts.Bootstrap = 0
	res := analysis.Analyze(analysistest.Base([]int{64, 128, 256, 512}).Levels, analysis.Meta{Name: "flat"}, opts)
	ws := strings.Join(res.Warnings, "\n")
	if strings.Contains(ws, "R² — only") || !strings.Contains(ws, "its R² is undefined") {
		t.Errorf("warnings %q: want the undefined R² named, not printed as —", ws)
	}
}
