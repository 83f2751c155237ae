package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"
)

// Awkward sweeps an SRE feeds `kneecap analyze`: each test pins one conclusion the numbers
// support, and the warning that goes with it.

// A straight throughput line (never saturating) has no Kneedle knee either: on log2
// concurrency it is convex, and the only knee Kneedle (as kneed) returns is the first level,
// an edge artefact. Before, analysis.json carried kneedle.knee = 1 and the report listed it
// as a fitted knee.
func TestAnalyzeStraightLineHasNoKneedleKnee(t *testing.T) {
	var levels []Level
	for _, c := range geometricLevels(64) {
		levels = append(levels, Level{Concurrency: c, OutputTPS: Float(100 * float64(c)), Valid: true, Steady: true,
			TTFT: Latency{Float(20), Float(20), Float(21), Float(22), Float(23)}, TPOT: NoLatency(), ITL: NoLatency(),
			E2E: Latency{Float(1300), Float(1300), Float(1300), Float(1300), Float(1300)}})
	}
	r := Analyze(levels, Meta{}, DefaultOptions())
	if r.Throughput.Kneedle != nil {
		t.Errorf("kneedle %+v on a straight line, want none", *r.Throughput.Kneedle)
	}
	if !hasWarning(r, "kneedle: no knee") || !hasWarning(r, "no knee: throughput still grows") {
		t.Errorf("warnings %q lack the Kneedle and headline no-knee warnings", r.Warnings)
	}
	// E2E is flat, so power (TPS ÷ E2E) peaks at the last level: the maximum lies beyond.
	if r.OperatingPoint == nil || r.OperatingPoint.Concurrency != 64 || !hasWarning(r, "still rises at the largest valid level (concurrency 64)") {
		t.Errorf("operating point %+v, warnings %q: want 64 with a still-rising warning", r.OperatingPoint, r.Warnings)
	}
}

// A sweep over 1 … 65536 users (×4 steps) of a server with S = 256 slots (the simulator's
// ground truth, DESIGN §6: TTFT flat up to S, then linear in the queue): the TTFT blow-up is
// at S. An unweighted least-squares ramp is placed by the largest TTFTs alone and put the
// blow-up at concurrency 1, through a TTFT that is flat up to 256; the weighted fit finds
// S within ±25% (the tolerance of TestAnalyzeGroundTruth).
func TestAnalyzeBlowupOverAHugeRange(t *testing.T) {
	const S = 256
	var cs []int
	for c := 1; c <= 65536; c *= 4 {
		cs = append(cs, c)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		r := Analyze(groundTruth(S, cs, 0.025, seed), Meta{}, Options{Bootstrap: 0})
		b := r.TTFTBlowup
		if b == nil || b.Method != MethodHinge || math.Abs(float64(b.Concurrency)/S-1) > 0.25 {
			t.Errorf("seed %d: blow-up %+v, want a hinge within ±25%% of %d; warnings %q", seed, b, S, r.Warnings)
		}
	}
}

// fitRampWeighted recovers an exact ramp (as fitRamp does, fit_test.go), and on the wide
// sweep where the unweighted fit puts the breakpoint at the first point it finds the flat part.
func TestFitRampWeighted(t *testing.T) {
	x := []float64{1, 2, 4, 8, 16, 24, 32, 48, 64}
	y := make([]float64, len(x))
	for i := range x {
		y[i] = 200 + 40*math.Max(0, x[i]-20.5)
	}
	r, err := fitRampWeighted(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if !scalar.EqualWithinAbsOrRel(r.Breakpoint, 20.5, 1e-9, 1e-9) || !scalar.EqualWithinAbsOrRel(r.Base, 200, 1e-9, 1e-9) ||
		!scalar.EqualWithinAbsOrRel(r.Slope, 40, 1e-9, 1e-9) || !scalar.EqualWithinAbsOrRel(r.R2, 1, 1e-9, 1e-9) {
		t.Errorf("ramp = %+v, want breakpoint 20.5, base 200, slope 40, R² 1", r)
	}
	// TTFT p50 (ms) flat at 1000 up to ~150 users, then +4.6 ms per user; fitRamp puts the
	// breakpoint at 1.
	wx := []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536}
	wy := []float64{1000, 1000, 1000, 1100, 1500, 5000, 20000, 80000, 300000}
	r, err = fitRampWeighted(wx, wy)
	if err != nil || r.Breakpoint < 64 || r.Breakpoint > 256 || math.Abs(r.Base/1000-1) > 0.05 {
		t.Errorf("weighted ramp %+v (err %v), want a breakpoint in [64, 256] and a base within 5%% of 1000 ms", r, err)
	}
	if _, err := fitRampWeighted([]float64{1, 2, 4}, []float64{10, 0, 30}); err == nil {
		t.Error("a zero TTFT: want an error (the weights need y > 0)")
	}
	// A point without a concurrency is left out of the fit and of its R² alike.
	with, err1 := fitRampWeighted([]float64{1, 2, 4, math.NaN(), 8, 16}, []float64{10, 10.2, 10.1, 0, 30, 70})
	without, err2 := fitRampWeighted([]float64{1, 2, 4, 8, 16}, []float64{10, 10.2, 10.1, 30, 70})
	if err1 != nil || err2 != nil || with != without {
		t.Errorf("NaN-x point: %+v (%v), without it %+v (%v); want the same fit", with, err1, without, err2)
	}
}

// TestAnalyzeBlowupLevelAtSMissing: when the level at the true breakpoint is excluded (a
// client-bound or unsteady level at S), the blow-up must not snap to the last flat level.
// Least squares on relative error (weights y^−2) put it at S/2 for every seed here; the
// y^−1.5 weights keep it within ±25% of S, as the unweighted fit does (ground truth as
// TestAnalyzeGroundTruth, 2.5% noise).
func TestAnalyzeBlowupLevelAtSMissing(t *testing.T) {
	for _, S := range []int{8, 16, 32} {
		for seed := uint64(1); seed <= 20; seed++ {
			var lv []Level
			for _, l := range groundTruth(S, geometricLevels(4*S), 0.025, seed) {
				if l.Concurrency != S {
					lv = append(lv, l)
				}
			}
			r := Analyze(lv, Meta{}, Options{Bootstrap: 0})
			b := r.TTFTBlowup
			if b == nil || math.Abs(float64(b.Concurrency)/float64(S)-1) > 0.25 {
				t.Errorf("S=%d seed %d, level %d removed: blow-up %+v, want within ±25%% of S; warnings %q", S, seed, S, b, r.Warnings)
			}
		}
	}
}

// A server that collapses to 0 tokens/s at its last level keeps its fitted curve: the zero
// level is left out of the fits (USL and batch have no zero) with a warning, and still counts
// for overload. Before, the single zero made USL and batch fail and the knee fell back to the
// hinge.
func TestAnalyzeZeroThroughputLevel(t *testing.T) {
	levels := groundTruth(16, geometricLevels(128), 0, 1)
	levels[len(levels)-1].OutputTPS = 0 // concurrency 128 collapsed
	r := Analyze(levels, Meta{}, Options{Bootstrap: 0})
	if r.Throughput.USL == nil || r.Throughput.Batch == nil || r.Knee == nil {
		t.Fatalf("usl %v batch %v knee %v; warnings %q", r.Throughput.USL, r.Throughput.Batch, r.Knee, r.Warnings)
	}
	// The noise-free curve with S = 16: the batch model fits it exactly (R² = 1 to 1e-9).
	if b := r.Throughput.Batch; !scalar.EqualWithinAbsOrRel(float64(b.Limit), 16, 1e-6, 1e-6) {
		t.Errorf("batch limit %v, want 16", b.Limit)
	}
	if !hasWarning(r, "concurrency 128 with 0 output tokens/s are left out") || hasWarning(r, "not positive and finite") {
		t.Errorf("warnings %q: want the zero level named, not a failed fit", r.Warnings)
	}
	if !r.Overload.Detected || r.Overload.FromConcurrency != 128 || r.Overload.DropPct != 100 {
		t.Errorf("overload %+v, want detected from 128, drop 100%%", r.Overload)
	}
}

// The SLO warnings say what is missing: SLOs set but no valid level at all, or SLOs set on
// latencies no level reports — never "set ttft_p95, …" to a user who set them.
func TestAnalyzeSLOWarnings(t *testing.T) {
	lv := func(c int, valid bool) Level {
		return Level{Concurrency: c, OutputTPS: Float(100 * float64(c)), Valid: valid, Steady: true,
			TTFT: Latency{NaN(), Float(20), NaN(), NaN(), NaN()}, TPOT: NoLatency(), ITL: NoLatency(), E2E: NoLatency()}
	}
	tests := []struct {
		name   string
		levels []Level
		slo    SLO
		want   string
	}{
		{"no latencies", []Level{lv(1, true), lv(2, true), lv(4, true)}, DefaultOptions().SLO, "no valid level reports a latency the SLOs are set on"},
		{"no valid level", []Level{lv(1, false), lv(2, false)}, DefaultOptions().SLO, "no valid level to check the SLOs against"},
		{"no SLO set", []Level{lv(1, true)}, SLO{}, "no usable SLO: no SLO point. Next: set one"},
		{"no SLO set, no valid level", []Level{lv(1, false)}, SLO{}, "no usable SLO: no SLO point. Next: set one"},
	}
	for _, tt := range tests {
		r := Analyze(tt.levels, Meta{}, Options{SLO: tt.slo, Bootstrap: 0})
		if !hasWarning(r, tt.want) {
			t.Errorf("%s: warnings %q lack %q", tt.name, r.Warnings, tt.want)
		}
		if tt.slo != (SLO{}) && hasWarning(r, "no usable SLO (set") {
			t.Errorf("%s: SLOs set (TTFT p95 %v), yet the warnings %q ask to set them", tt.name, tt.slo.TTFTP95, r.Warnings)
		}
		if r.SLO.MaxConcurrency.OK() || r.SLO.Limit != "" {
			t.Errorf("%s: slo %+v, want no point and no binding SLO", tt.name, r.SLO)
		}
	}
}

// One level with a TTFT cannot show a blow-up, and the warning says so instead of "stays
// within 3x of the first level's … up to concurrency 8" (the first level itself).
func TestAnalyzeBlowupOneLevel(t *testing.T) {
	r := Analyze([]Level{{Concurrency: 8, OutputTPS: 800, Valid: true, Steady: true,
		TTFT: Latency{NaN(), Float(20), NaN(), NaN(), NaN()}, TPOT: NoLatency(), ITL: NoLatency(), E2E: NoLatency()}}, Meta{}, DefaultOptions())
	if r.TTFTBlowup != nil || !hasWarning(r, "only one valid level (concurrency 8) has a TTFT p50") {
		t.Errorf("blow-up %+v warnings %q", r.TTFTBlowup, r.Warnings)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "stays within") {
			t.Errorf("vacuous warning %q", w)
		}
	}
}

// Overload on noisy throughput: the peak is the highest of several noisy levels, so ±20%
// scatter on a plateau "falls" more than 10% past it by chance. The drop is still reported
// (DESIGN §4's rule), with a warning that it is within the noise; a real fall (a retrograde
// curve the USL fits with R² > 0.99) gets no such warning, and neither does a drop larger
// than the levels' 95% CIs, while overlapping CIs do.
func TestAnalyzeOverloadWithinNoise(t *testing.T) {
	mk := func(tps, ci []float64) []Level {
		var out []Level
		for i, c := range geometricLevels(128) {
			l := Level{Concurrency: c, OutputTPS: Float(tps[i]), OutputTPSCI95: NaN(), Valid: true, Steady: true,
				TTFT: NoLatency(), TPOT: NoLatency(), ITL: NoLatency(), E2E: NoLatency()}
			if ci != nil {
				l.OutputTPSCI95 = Float(ci[i])
			}
			out = append(out, l)
		}
		return out
	}
	// A plateau of ~1850 tokens/s from 16 on, ±20% level to level; 128 is 26% below 64.
	noisy := []float64{120, 160, 480, 640, 1900, 1500, 2300, 1700}
	// A server that degrades: 1100 at 16, then 1000, 700, 400.
	degrading := []float64{100, 195, 380, 700, 1100, 1000, 700, 400}
	tests := []struct {
		name  string
		tps   []float64
		ci    []float64
		noise bool
	}{
		{"noisy plateau, no CIs", noisy, nil, true},
		{"degrading, no CIs", degrading, nil, false},
		{"noisy plateau, CIs ±20%", noisy, []float64{24, 32, 96, 128, 380, 300, 460, 340}, true},
		{"noisy plateau, CIs ±3%", noisy, []float64{4, 5, 14, 19, 57, 45, 69, 51}, false},
	}
	for _, tt := range tests {
		r := Analyze(mk(tt.tps, tt.ci), Meta{}, Options{Bootstrap: 0})
		if !r.Overload.Detected {
			t.Errorf("%s: overload %+v, want detected", tt.name, r.Overload)
			continue
		}
		if got := hasWarning(r, "may be noise"); got != tt.noise {
			t.Errorf("%s: noise warning %v, want %v; warnings %q", tt.name, got, tt.noise, r.Warnings)
		}
	}
}

// A level without an output TPS is dropped with a warning that says "null", not "NaN" (a
// report prints every warning).
func TestAnalyzeDroppedLevelWarning(t *testing.T) {
	r := Analyze([]Level{{Concurrency: 1, OutputTPS: NaN(), Valid: true}, {Concurrency: 2, OutputTPS: Float(math.Inf(1)), Valid: true}}, Meta{}, DefaultOptions())
	if !hasWarning(r, "level concurrency 1: dropped") || !hasWarning(r, "(output TPS null)") || !hasWarning(r, "(output TPS infinite)") {
		t.Errorf("warnings %q", r.Warnings)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "NaN") || strings.Contains(w, "Inf") {
			t.Errorf("warning %q prints a non-finite number", w)
		}
	}
}

// Coarse levels (1, 4, 16, 64 for S = 32) cannot place the knee or the blow-up: both lie in
// the 16–64 gap, and four levels leave one residual degree of freedom to a three-parameter
// fit. The analysis says so instead of quoting a knee "95% interval 23.3–23.3" and a blow-up
// below a level whose TTFT is still at baseline. A doubling sweep gets none of these warnings.
func TestAnalyzeCoarseLevelsWarn(t *testing.T) {
	const S = 32
	has := func(ws []string, sub string) bool {
		return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, sub) })
	}
	r := Analyze(groundTruth(S, []int{1, 4, 16, 64}, 0.025, 1), Meta{}, DefaultOptions())
	if r.Knee == nil || r.Knee.Interval[0].OK() || r.Knee.Interval[1].OK() {
		t.Errorf("knee %+v: want a knee without an interval from 4 levels", r.Knee)
	}
	for _, want := range []string{
		"between the measured levels 16 and 64",        // the knee
		"up to concurrency 16 and exceeds it at 64",    // the blow-up
		"4 valid levels leave 1 residual degree(s) of", // the interval
	} {
		if !has(r.Warnings, want) {
			t.Errorf("warnings %q lack %q", r.Warnings, want)
		}
	}
	r = Analyze(groundTruth(S, geometricLevels(4*S), 0.025, 1), Meta{}, DefaultOptions())
	if r.Knee == nil || !r.Knee.Interval[0].OK() || has(r.Warnings, "lies between") || has(r.Warnings, "residual degree") {
		t.Errorf("doubling sweep: knee %+v, warnings %q; want an interval and no gap warning", r.Knee, r.Warnings)
	}
	// A knee at the first level (already saturated there) is not "between" two levels.
	r = Analyze(groundTruth(8, []int{32, 128, 512, 2048}, 0.025, 1), Meta{}, DefaultOptions())
	if !has(r.Warnings, "knee at or below the smallest valid level") || has(r.Warnings, "headline knee (32) lies between") {
		t.Errorf("knee at the first level: warnings %q", r.Warnings)
	}
}

// A level-summary CSV's goodput was counted under its writer's SLOs. Analysed under looser
// ones, a level that meets every SLO at p95 cannot have most of its requests fail them: the
// goodput is left null with a warning rather than quoted as "0.00 requests/s" next to "the
// SLO holds at every level".
func TestAnalyzeGoodputFromOtherSLO(t *testing.T) {
	opts := DefaultOptions()
	opts.Bootstrap = 0
	opts.SLO = SLO{TTFTP95: 100 * time.Second}
	lv := groundTruth(16, geometricLevels(64), 0.025, 1) // goodput = QPS at every level
	r := Analyze(lv, Meta{}, opts)
	if !r.SLO.GoodputQPS.OK() || slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "counted under other SLOs") }) {
		t.Errorf("consistent goodput: %v, warnings %q", r.SLO.GoodputQPS, r.Warnings)
	}
	for i := range lv {
		lv[i].GoodputQPS = 0 // counted under a strict SLO no level met
	}
	r = Analyze(lv, Meta{}, opts)
	if r.SLO.GoodputQPS.OK() || !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "counted under other SLOs") }) {
		t.Errorf("goodput 0 at levels meeting the SLO: goodput %v, warnings %q; want null and a warning", r.SLO.GoodputQPS, r.Warnings)
	}
}
