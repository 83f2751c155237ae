package analysis

import (
	"strings"
	"testing"
)

// thinLevels returns valid levels at 1, 2, 4, … with the given TTFT p50 (ms) and a
// throughput that saturates, the rest as in TestAnalyzeStraightLineHasNoKneedleKnee.
func thinLevels(ttft []float64) []Level {
	var levels []Level
	for i, v := range ttft {
		c := 1 << i
		lat := Latency{Float(v), Float(v), Float(1.1 * v), Float(1.15 * v), Float(1.2 * v)}
		levels = append(levels, Level{Concurrency: c, OutputTPS: Float(2000 * float64(c) / float64(c+8)), Valid: true, Steady: true,
			TTFT: lat, TPOT: NoLatency(), ITL: NoLatency(), E2E: Latency{Float(1300), Float(1300), Float(1300), Float(1300), Float(1300)}})
	}
	return levels
}

// TestBlowupNeedsASupportedRamp: a partial analysis of 6 valid levels (1 … 32) whose TTFT p50
// rose from 7.6 ms to 27 ms said "TTFT blows up past concurrency 1". A rise of 3.6× is prefill
// contention, not queueing: no blow-up is claimed (DESIGN §4.4: a 5× rise over the flat
// part, and for a fitted ramp at least 2 levels on it), and the warning gives the rise
// instead of saying TTFT stayed within 3×. A 40× jump at the last level is the fallback's
// measured blow-up, not a fitted ramp through one point; two levels on the ramp are a hinge.
func TestBlowupNeedsASupportedRamp(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttft []float64
		want Method // the blow-up's method, "" for none
		warn string // a warning containing it
	}{
		{"partial 7.6 → 27 ms", []float64{7.6, 7.9, 8.5, 10, 15, 27}, "", "rises from 7.6 ms to 27 ms (3.6x) up to concurrency 32"},
		{"just short of 5x", []float64{10, 10, 10.5, 11, 30, 49}, "", "(4.9x)"},
		{"one level past", []float64{10, 10, 10.5, 11, 10.8, 400}, method3xBaseline, ""},
		{"flat", []float64{10, 10, 10.5, 11, 10.8, 12}, "", "stays within 3x"},
		{"two levels past", []float64{10, 10, 10.5, 11, 10.8, 200, 600}, MethodHinge, ""},
	} {
		r := Analyze(thinLevels(tc.ttft), Meta{}, Options{Bootstrap: 0})
		var got Method
		if r.TTFTBlowup != nil {
			got = r.TTFTBlowup.Method
		}
		if got != tc.want {
			t.Errorf("%s: blow-up %+v, want method %q; warnings %q", tc.name, r.TTFTBlowup, tc.want, r.Warnings)
		}
		if tc.warn != "" && !hasWarning(r, tc.warn) {
			t.Errorf("%s: warnings %q lack %q", tc.name, r.Warnings, tc.warn)
		}
	}
}

// TestRampSupported pins the rule on its edges: levels past the breakpoint above twice the
// baseline, and the 5× rise.
func TestRampSupported(t *testing.T) {
	x := []float64{1, 2, 4, 8}
	for _, tc := range []struct {
		y    []float64
		at   float64
		want bool
	}{
		{[]float64{10, 10, 30, 50}, 2, true},    // 4 and 8 past 2, above 20; 50 = 5 × 10
		{[]float64{10, 10, 30, 49.9}, 2, false}, // just short of 5×
		{[]float64{10, 10, 30, 50}, 4, false},   // only 8 past 4
		{[]float64{10, 10, 20, 50}, 2, false},   // 4 is at 2× the baseline, not above it
	} {
		if got := rampSupported(x, tc.y, tc.at, 10); got != tc.want {
			t.Errorf("y %v at %g: supported %v, want %v", tc.y, tc.at, got, tc.want)
		}
	}
	if !strings.Contains(blowupUnsupported("", 7.6, 27, 32).text, "p50") {
		t.Error("the warning does not name the default statistic p50")
	}
}
