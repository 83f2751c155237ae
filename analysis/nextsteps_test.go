package analysis

import (
	"strings"
	"testing"
)

// TestNextOf: a warning's next step is the clause after "Next: ", up to a colon outside
// parentheses that explains it, without a full stop; none for "Next: none: …" or no "Next:".
func TestNextOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"no TTFT blow-up: TTFT p50 stays within 3x of the first level's 12 ms up to concurrency 64. Next: extend the sweep past 64 (add 128 and 256 to --levels): queueing past saturation blows TTFT up",
			"extend the sweep past 64 (add 128 and 256 to --levels)"},
		{"slo: no usable SLO: no SLO point. Next: set one (slo.ttft_p95, tpot_p95, e2e_p95 or another metric_pNN in the configuration, or --slo ttft:p99:2s)",
			"set one (slo.ttft_p95, tpot_p95, e2e_p95 or another metric_pNN in the configuration, or --slo ttft:p99:2s)"},
		{"knee at or below the smallest valid level (concurrency 1): one doubling already adds < 10%. Next: none: one request at a time already takes the server's throughput", ""},
		{"no valid levels: nothing to analyze. Next: see why each level was excluded (its notes).", "see why each level was excluded (its notes)"},
		{"capacity: no capacity: replicas at capacity are unknown", ""},
	} {
		if got := nextOf(tc.text); got != tc.want {
			t.Errorf("nextOf(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestAnswersOfMarginalGainPoint: the warnings of a missing or bounded marginal-gain point
// leave open the answer their constructor was given, the knee or the efficient point, and
// name it in their text.
func TestAnswersOfMarginalGainPoint(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{AnswerKnee, AnswerEfficientPoint} {
		for _, w := range []warning{kneeSpan(answer, 4, 6), kneeBeyond(answer, 30, 64, 0.1), kneeAtBottom(answer, 8, 0.1)} {
			if got := answersOf(w); len(got) != 1 || got[0] != answer {
				t.Errorf("%q: answers %q, want %q", w.text, got, answer)
			}
			if !strings.Contains(w.text, pointName(answer)) {
				t.Errorf("%q does not name the %s", w.text, pointName(answer))
			}
		}
	}
}
