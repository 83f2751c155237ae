package analysis_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestRisingLatencyIsOverloadEvidence: levels excluded because TTFT was still rising are
// evidence of overload, not missing data. On the demo engine's curve (analysistest.Level: S =
// 32, TTFT p50 12 ms up to S, 1,536 ms at 64 and 4,584 ms at 128) with 64 and 128 excluded and
// rising, the valid levels 1 … 32 alone show no blow-up (flat TTFT); with the rising levels the
// blow-up is found past 32, and the knee warning says the server was overloaded at 64.
func TestRisingLatencyIsOverloadEvidence(t *testing.T) {
	var levels []analysis.Level
	for _, c := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
		levels = append(levels, analysistest.Level(c))
	}
	for i := 6; i < 8; i++ {
		l := &levels[i]
		l.Steady, l.Valid, l.LatencyRising = false, false, true
		l.Notes = append(l.Notes, "invalid: not steady: the steady-state test failed")
	}
	opts := analysis.DefaultOptions()
	opts.Bootstrap = 0
	res := analysis.Analyze(levels, analysis.Meta{}, opts)
	b := res.TTFTBlowup
	if b == nil || !(float64(b.Concurrency) >= 32 && float64(b.Concurrency) < 64) {
		t.Errorf("blow-up %+v: want one between 32 and 64 from the rising levels", b)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "TTFT was still rising") }) {
		t.Errorf("warnings %q: want the knee's overload evidence", res.Warnings)
	}

	// Without the rising flag the same excluded levels are no evidence: no blow-up.
	for i := 6; i < 8; i++ {
		levels[i].LatencyRising = false
	}
	if res = analysis.Analyze(levels, analysis.Meta{}, opts); res.TTFTBlowup != nil {
		t.Errorf("excluded levels not rising: blow-up %+v, want none", res.TTFTBlowup)
	}
}
