package record

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// Student t critical values from any printed t table (e.g. NIST/SEMATECH e-Handbook of
// Statistical Methods, §1.3.6.7.2, "Critical values of the Student's t distribution"):
// t(0.975, 9) = 2.262, t(0.975, 8) = 2.306, t(0.995, 8) = 3.355.
const (
	t975df9 = 2.262
	t975df8 = 2.306
	t995df8 = 3.355
)

// orth is a residual pattern of length 10 with Σe = 0 and Σ i·e_i = 0 (orthogonal to the
// intercept and the slope), so it changes only the residual sum of squares (SSE = 8).
var orth = []float64{1, -1, -1, 1, 0, 0, 1, -1, -1, 1}

// sxx10 is Σ(i − 4.5)² for i = 0..9.
const sxx10 = 82.5

func TestSteadyState(t *testing.T) {
	// Hand computation for the steady series: deviations 0,2,−2,1,−1,0,3,−3,0,0 from a mean of
	// 100, Σd² = 28, s = √(28/9), half-width = 2.262·s/√10, relative to 100.
	steadySeries := []float64{100, 102, 98, 101, 99, 100, 103, 97, 100, 100}
	steadyCI := t975df9 * math.Sqrt(28.0/9) / math.Sqrt(10) / 100

	trending := make([]float64, 10)
	for i := range trending {
		trending[i] = 100 + 2*float64(i) + orth[i]
	}
	// mean 109; s² = (4·82.5 + 8)/9 (slope and residual parts are orthogonal).
	trendingCI := t975df9 * math.Sqrt((4*sxx10+8)/9) / math.Sqrt(10) / 109

	tests := []struct {
		name       string
		in         []float64
		target     float64
		wantCI     float64 // NaN: do not check
		wantP      func(p float64) bool
		wantSteady bool
	}{
		{"steady", steadySeries, 0.05, steadyCI, func(p float64) bool { return p > 0.5 }, true},
		{"steady but CI above a tight target", steadySeries, 0.01, steadyCI, func(p float64) bool { return p > 0.5 }, false},
		// The CI is inside 5% (3.8%) but the slope is unmistakable: not steady.
		{"trending", trending, 0.05, trendingCI, func(p float64) bool { return p < 1e-6 }, false},
		// Alternating 50/150: mean 100, s = √(10·2500/9), half-width 37.7% of the mean.
		{"noisy", []float64{50, 150, 50, 150, 50, 150, 50, 150, 50, 150}, 0.05,
			t975df9 * math.Sqrt(10*2500.0/9) / math.Sqrt(10) / 100, func(p float64) bool { return p > 0.5 }, false},
		// Significant (p < 1e-6) but the fitted change over the window is 1.8 of 1000.9 = 0.18%,
		// inside the 5% target: no material trend, steady.
		{"negligible trend", func() []float64 {
			y := make([]float64, 10)
			for i := range y {
				y[i] = 1000 + 0.2*float64(i) + 0.01*orth[i]
			}
			return y
		}(), 0.05, math.NaN(), func(p float64) bool { return p < 1e-6 }, true},
		{"constant", []float64{7, 7, 7, 7, 7, 7, 7, 7, 7, 7}, 0.05, 0, func(p float64) bool { return p == 1 }, true},
		{"exact line", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.5, math.NaN(), func(p float64) bool { return p == 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ci, p, steady := SteadyState(tt.in, tt.target)
			if !math.IsNaN(tt.wantCI) && !scalar.EqualWithinAbsOrRel(ci, tt.wantCI, 1e-9, 5e-4) {
				t.Errorf("ci half-width = %.6f, want %.6f (t table value, rounded to 4 digits)", ci, tt.wantCI)
			}
			if !tt.wantP(p) {
				t.Errorf("trend p = %g: out of the expected range", p)
			}
			if steady != tt.wantSteady {
				t.Errorf("steady = %v, want %v (ci %.4f, p %.4g)", steady, tt.wantSteady, ci, p)
			}
		})
	}
}

// TestSteadyStateTrendPAtCriticalT builds series whose slope t-statistic is exactly a tabled
// critical value of t with 8 degrees of freedom, so the two-sided p-value must be the tabled
// tail probability.
func TestSteadyStateTrendPAtCriticalT(t *testing.T) {
	// With residuals orth, SSE = 8, s² = 8/(10−2) = 1 and se(β) = √(1/82.5).
	se := math.Sqrt(1 / sxx10)
	for _, tc := range []struct {
		tcrit, wantP float64
	}{
		{t975df8, 0.05},
		{t995df8, 0.01},
	} {
		for _, sign := range []float64{1, -1} {
			y := make([]float64, 10)
			for i := range y {
				y[i] = 1000 + sign*tc.tcrit*se*float64(i) + orth[i]
			}
			_, p, _ := SteadyState(y, 1)
			// The table rounds t to 3 decimals: ±0.0005 in t moves p by < 3%.
			if !scalar.EqualWithinRel(p, tc.wantP, 0.03) {
				t.Errorf("t = %v (sign %v): p = %.5f, want %.3f", tc.tcrit, sign, p, tc.wantP)
			}
		}
	}
}

func TestSteadyStateUndefined(t *testing.T) {
	for name, in := range map[string][]float64{
		"too few":   {1, 2},
		"zero mean": {0, 0, 0, 0},
		"NaN":       {1, math.NaN(), 1, 1},
		"Inf":       {1, math.Inf(1), 1, 1},
	} {
		ci, p, steady := SteadyState(in, 0.05)
		if !math.IsNaN(ci) || !math.IsNaN(p) || steady {
			t.Errorf("%s: got (%v, %v, %v), want (NaN, NaN, false)", name, ci, p, steady)
		}
	}
}
