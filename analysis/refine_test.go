package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRefinementRule checks the rule on hand-made results; every expected level is worked
// out from Refinement's documented rule in the case's comment.
func TestRefinementRule(t *testing.T) {
	geo := []int{1, 2, 4, 8, 16, 32, 64}
	slo := func(v float64) SLOResult { return SLOResult{MaxConcurrency: Float(v), Limit: "ttft_p95"} }
	cases := []struct {
		name      string
		res       Result
		attempted []int
		want      int
		wantWhy   string
	}{
		{
			// SLO 41.3 in [32, 64]: gap min(ln 1.29, ln 1.55) = 0.255; knee 24.4 in [16, 32]:
			// min(ln 1.525, ln 1.311) = 0.271, larger: the knee, at round(24.4) = 24, inside the
			// middle half [⌈16·2^¼⌉, ⌊16·2^¾⌋] = [20, 26].
			name: "farthest answer first",
			res:  Result{SLO: slo(41.3), Knee: &Knee{Concurrency: 24.4}}, attempted: geo,
			want: 24, wantWhy: "knee ≈ 24.4 lies between levels 16 and 32",
		},
		{
			// The plateau-onset knee 32.6 is within 5% of 32; the efficient point 24.4 below it
			// lies in [16, 32] (as the knee of the first case): a level at 24 for it.
			name: "efficient point under the plateau-onset rule",
			res: Result{Knee: &Knee{Concurrency: 32.6, Rule: RulePlateauOnset},
				EfficientPoint: &EfficientPoint{Concurrency: 24.4}}, attempted: geo,
			want: 24, wantWhy: "efficient point ≈ 24.4 lies between levels 16 and 32",
		},
		{
			// Under the marginal-gain rule the efficient point is the knee: named as the knee.
			name: "efficient point that is the knee",
			res: Result{Knee: &Knee{Concurrency: 24.4, Rule: RuleMarginalGain},
				EfficientPoint: &EfficientPoint{Concurrency: 24.4}}, attempted: geo,
			want: 24, wantWhy: "knee ≈ 24.4 lies between levels 16 and 32",
		},
		{
			// SLO 35 in [32, 64]: gap ln(35/32) = 0.090 > ln 1.05; round(35) = 35 is below the
			// middle half [⌈38.05⌉, ⌊53.8⌋] = [39, 53]: 39.
			name: "kept in the middle half",
			res:  Result{SLO: slo(35)}, attempted: geo,
			want: 39, wantWhy: "SLO limit ≈ 35.0 lies between levels 32 and 64",
		},
		{
			// 33 is within 5% of 32 (ln(33/32) = 0.031 ≤ ln 1.05 = 0.049).
			name: "close to a measured level",
			res:  Result{SLO: slo(33)}, attempted: geo,
		},
		{
			// 2.5 in [2, 3]: no integer strictly between.
			name: "no integer inside",
			res:  Result{Knee: &Knee{Concurrency: 2.5}}, attempted: []int{1, 2, 3, 4},
		},
		{
			// Every level meets the SLO (Limit ""): MaxConcurrency is the largest level, a
			// bound, not a crossing; the blow-up lies past the attempted range.
			name: "bounds and extrapolation",
			res: Result{SLO: SLOResult{MaxConcurrency: 64}, TTFTBlowup: &Blowup{Concurrency: 80},
				Knee: &Knee{Concurrency: 0.7}},
			attempted: geo,
		},
		{
			// NaN answers and a failing first level (MaxConcurrency null) add nothing.
			name:      "null answers",
			res:       Result{SLO: SLOResult{MaxConcurrency: NaN(), Limit: "ttft_p95"}, Knee: &Knee{Concurrency: NaN()}},
			attempted: geo,
		},
		{
			// Equal gaps: 5.657 = 4·√2 is the geometric middle of [4, 8] for all three; ties go
			// to the SLO limit. round(5.657) = 6 ∈ [⌈4.76⌉, ⌊6.73⌋] = [5, 6].
			name: "tie order",
			res: Result{SLO: slo(4 * math.Sqrt2), Knee: &Knee{Concurrency: Float(4 * math.Sqrt2)},
				TTFTBlowup: &Blowup{Concurrency: Float(4 * math.Sqrt2)}},
			attempted: geo,
			want:      6, wantWhy: "SLO limit ≈ 5.66 lies between levels 4 and 8",
		},
		{
			// An attempted level (here an invalid one at 24) bounds the bracket like any other:
			// the blow-up 20 now lies in [16, 24], gap min(ln 1.25, ln 1.2) = 0.18; round(20)
			// = 20 ∈ [⌈17.7⌉, ⌊21.7⌋] = [18, 21].
			name: "attempted levels bound the bracket",
			res:  Result{TTFTBlowup: &Blowup{Concurrency: 20}}, attempted: []int{32, 16, 24, 8, 24},
			want: 20, wantWhy: "TTFT blow-up ≈ 20.0 lies between levels 16 and 24",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, why := Refinement(&tc.res, levelXs(tc.attempted))
			if c != float64(tc.want) || why != tc.wantWhy {
				t.Errorf("Refinement = %g, %q; want %d, %q", c, why, tc.want, tc.wantWhy)
			}
		})
	}
	if c, _ := Refinement(nil, levelXs(geo)); c != 0 {
		t.Errorf("nil result: %g", c)
	}
}

// levelXs returns concurrencies as the x of their levels.
func levelXs(cs []int) []float64 {
	xs := make([]float64, len(cs))
	for i, c := range cs {
		xs[i] = float64(c)
	}
	return xs
}

// TestRefinementConverges runs the refinement loop on the ground-truth curve (S = 24, demo
// step profile, 1% noise): levels are added until Refinement has nothing left, and then
// every answer has a measured level within RefineTolerance of it, or no integer between its
// neighbours; the SLO limit lies between a passing and a failing measured level. Truth: TTFT
// p95 = 1.15·(t + (c/S − 1)·128·t) with t = 10 ms past S (groundTruth), ≤ 1 s up to
// c = 24·(1 + (1000/1.15 − 10)/1280) = 40.1.
func TestRefinementConverges(t *testing.T) {
	const S = 24
	opts := DefaultOptions()
	opts.Bootstrap = 0
	opts.SLO = SLO{TTFTP95: time.Second, TPOTP95: 50 * time.Millisecond}
	attempted := geometricLevels(128)
	levels := groundTruth(S, attempted, 0.01, 3)
	var res *Result
	added := 0
	for ; ; added++ {
		r := Analyze(levels, Meta{}, opts)
		res = &r
		x, why := Refinement(res, levelXs(attempted))
		if x == 0 {
			break
		}
		c := int(x)
		if slices.Contains(attempted, c) || c < 1 || c > 128 {
			t.Fatalf("added level %d (%s): attempted already or outside 1–128", c, why)
		}
		if added == 12 {
			t.Fatalf("still adding after 12 levels: %v", attempted)
		}
		t.Logf("add %d: %s", c, why)
		attempted = append(attempted, c)
		lv := groundTruth(S, []int{c}, 0.01, uint64(100+added))[0]
		levels = append(levels, lv)
	}
	if added < 2 {
		t.Errorf("added %d levels; the knee, the blow-up and the SLO limit each lie far from a power of two", added)
	}
	slices.Sort(attempted)
	check := func(name string, v Float) {
		t.Helper()
		if !v.OK() {
			t.Errorf("%s is null", name)
			return
		}
		i, _ := slices.BinarySearch(attempted, int(math.Ceil(float64(v))))
		lo, hi := attempted[i-1], attempted[i]
		near := math.Min(float64(v)/float64(lo), float64(hi)/float64(v)) <= 1+RefineTolerance
		if !near && hi-lo > 1 {
			t.Errorf("%s %.2f: nearest measured levels %d and %d", name, float64(v), lo, hi)
		}
	}
	check("SLO limit", res.SLO.MaxConcurrency)
	check("knee", res.Knee.Concurrency)
	check("efficient point", res.EfficientPoint.Concurrency)
	check("TTFT blow-up", res.TTFTBlowup.Concurrency)
	if v := float64(res.SLO.MaxConcurrency); math.Abs(v-40.1)/40.1 > 0.05 {
		t.Errorf("SLO limit %.2f, truth 40.1 (±5%%)", v)
	}
	if res.SLO.Limit != "ttft_p95" {
		t.Errorf("limit %q, want the TTFT SLO to bind", res.SLO.Limit)
	}
	t.Logf("added %d levels: %v; SLO limit %.2f, knee %.2f, blow-up %.2f", added, attempted,
		float64(res.SLO.MaxConcurrency), float64(res.Knee.Concurrency), float64(res.TTFTBlowup.Concurrency))
}

// TestKneedleAxisKeepsPlan: Kneedle reads a doubling plan on log2(concurrency) even after
// levels were added between the doublings (sweep.refine); the same levels unmarked are no
// longer geometric, and Kneedle reads them on concurrency.
func TestKneedleAxisKeepsPlan(t *testing.T) {
	levels := groundTruth(16, append(geometricLevels(128), 12, 40), 0, 1)
	opts := DefaultOptions()
	opts.Bootstrap = 0
	shape := func() string {
		r := Analyze(levels, Meta{}, opts)
		if r.Throughput.Kneedle == nil {
			t.Fatal("no Kneedle result")
		}
		return r.Throughput.Kneedle.Shape
	}
	if s := shape(); strings.Contains(s, "log2") {
		t.Errorf("unmarked levels 1…128 with 12 and 40: Kneedle shape %q, want on concurrency", s)
	}
	for i := range levels {
		if c := levels[i].Concurrency; c == 12 || c == 40 {
			levels[i].Refine = "test"
		}
	}
	if s := shape(); !strings.Contains(s, "log2") {
		t.Errorf("levels 12 and 40 added: Kneedle shape %q, want on log2(concurrency)", s)
	}
}

// TestAnalyzeSortsLevels: levels come in run order (added levels last); the result lists them
// by concurrency, as analysis.json and summary.csv do.
func TestAnalyzeSortsLevels(t *testing.T) {
	levels := groundTruth(8, []int{1, 4, 16, 64, 8, 2}, 0, 1)
	levels[4].Refine, levels[5].Refine = "test", "test"
	r := Analyze(levels, Meta{}, Options{Bootstrap: 0})
	var got []int
	for _, l := range r.Levels {
		got = append(got, l.Concurrency)
	}
	if !slices.Equal(got, []int{1, 2, 4, 8, 16, 64}) {
		t.Errorf("levels %v, want sorted by concurrency", got)
	}
	if levels[4].Concurrency != 8 {
		t.Error("Analyze reordered its input")
	}
}
