package analysis

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

func linspace(a, b float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = a + (b-a)*float64(i)/float64(n-1)
	}
	return out
}

// Reference values from the kneed package (Satopää et al. 2011 reimplemented by Kevin
// Arvai): its README example and tests/test_sample.py (test_concave_increasing,
// test_concave_decreasing, test_convex_increasing, test_convex_decreasing, flat curves).
func TestKneedle(t *testing.T) {
	x10 := linspace(0, 9, 10)
	xf := linspace(0, 1, 10)
	yf := make([]float64, len(xf))
	for i, x := range xf {
		yf[i] = -1/(x+0.1) + 5
	}
	ones := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	tests := []struct {
		name   string
		x, y   []float64
		o      KneedleOptions
		want   float64
		noKnee bool
		tol    float64
	}{
		{"readme -1/(x+0.1)+5", xf, yf, KneedleOptions{Curve: Concave, Direction: Increasing}, 0.2222, false, 1e-3},
		{"concave increasing", x10, []float64{0, 60, 80, 85, 90, 95, 96, 97, 98, 99}, KneedleOptions{Curve: Concave, Direction: Increasing}, 2, false, 0},
		{"concave decreasing", x10, []float64{99, 98, 97, 96, 95, 90, 85, 80, 60, 0}, KneedleOptions{Curve: Concave, Direction: decreasing}, 7, false, 0},
		{"convex increasing", x10, []float64{1, 2, 3, 4, 5, 10, 15, 20, 40, 100}, KneedleOptions{Curve: convex, Direction: Increasing}, 7, false, 0},
		{"convex decreasing", x10, []float64{100, 40, 20, 15, 10, 5, 4, 3, 2, 1}, KneedleOptions{Curve: convex, Direction: decreasing}, 2, false, 0},
		{"all ones", x10, ones, KneedleOptions{}, 0, true, 0},
		{"straight line", x10, x10, KneedleOptions{}, 0, true, 0},
		{"two points", []float64{1, 2}, []float64{1, 2}, KneedleOptions{}, 0, true, 0},
		{"unsorted input", []float64{9, 0, 1, 2, 3, 4, 5, 6, 7, 8}, []float64{99, 0, 60, 80, 85, 90, 95, 96, 97, 98}, KneedleOptions{}, 2, false, 0},
		{"polynomial concave increasing", x10, []float64{0, 60, 80, 85, 90, 95, 96, 97, 98, 99}, KneedleOptions{PolynomialDegree: 2}, 2, false, 1},
	}
	for _, tt := range tests {
		got, ok, err := LocateKnee(tt.x, tt.y, tt.o)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if tt.noKnee {
			if ok {
				t.Errorf("%s: knee %v, want none", tt.name, got.Knee)
			}
			continue
		}
		if !ok || !scalar.EqualWithinAbsOrRel(got.Knee, tt.want, tt.tol, tt.tol) {
			t.Errorf("%s: knee %v (ok %v), want %v", tt.name, got.Knee, ok, tt.want)
		}
	}
	if _, _, err := LocateKnee(x10, x10, KneedleOptions{Curve: "wavy"}); err == nil {
		t.Error("bad curve: no error")
	}
}

// Online mode keeps going and returns the last knee (kneed's online=True).
func TestKneedleOnline(t *testing.T) {
	x := linspace(0, 19, 20)
	y := []float64{0, 50, 70, 75, 78, 80, 81, 82, 83, 84, 130, 160, 170, 175, 178, 180, 181, 182, 183, 184}
	off, ok1, _ := LocateKnee(x, y, KneedleOptions{})
	on, ok2, _ := LocateKnee(x, y, KneedleOptions{Online: true})
	if !ok1 || !ok2 || !(on.Knee > off.Knee) || len(on.All) < 2 {
		t.Errorf("offline %v, online %v (all %v): want online > offline with ≥ 2 knees", off.Knee, on.Knee, on.All)
	}
}

// Reference values: R package usl (Stefan Möding), tests/testthat — the exact synthetic
// curve σ = κ = 0.02, λ = 1; and the raytracer data set of Gunther's "Guerrilla Capacity
// Planning" (first six rows) with R usl's published estimates.
func TestFitUSL(t *testing.T) {
	tests := []struct {
		name                 string
		n, x                 []float64
		sigma, kappa, lambda float64
		tol                  float64
	}{
		{"usl synthetic", []float64{1, 2, 4, 6, 8, 10}, []float64{1, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557}, 0.02, 0.02, 1.00, 0.005},
		{"raytracer", []float64{1, 4, 8, 12, 16, 20}, []float64{20, 78, 130, 170, 190, 200}, 0.02444, 0.00163, 20.856, 0.01},
	}
	for _, tt := range tests {
		u, err := FitUSL(tt.n, tt.x)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		t.Logf("%s: σ=%.5f κ=%.5f λ=%.4f R²=%.4f N*=%.2f", tt.name, float64(u.Sigma), float64(u.Kappa), float64(u.Lambda), float64(u.R2), float64(u.PeakConcurrency))
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"sigma", float64(u.Sigma), tt.sigma}, {"kappa", float64(u.Kappa), tt.kappa}, {"lambda", float64(u.Lambda), tt.lambda}} {
			if !scalar.EqualWithinAbsOrRel(c.got, c.want, tt.tol, tt.tol) {
				t.Errorf("%s: %s = %v, want %v ± %v", tt.name, c.name, c.got, c.want, tt.tol)
			}
		}
	}
	// N* = √((1−σ)/κ) = √(0.98/0.02) = 7 for the synthetic curve.
	u, _ := FitUSL([]float64{1, 2, 4, 6, 8, 10}, []float64{1, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557})
	if !scalar.EqualWithinAbsOrRel(float64(u.PeakConcurrency), 7, 0.05, 0.01) || !(u.R2 > 0.9999) {
		t.Errorf("peak %v, R² %v: want 7, ≈1", u.PeakConcurrency, u.R2)
	}
}

func TestFitUSLRejectsBadInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		n, x []float64
	}{
		{"two levels", []float64{1, 2}, []float64{1, 2}},
		{"nan", []float64{1, 2, 4}, []float64{1, math.NaN(), 3}},
		{"zero tps", []float64{1, 2, 4}, []float64{1, 0, 3}},
		{"length mismatch", []float64{1, 2, 4}, []float64{1, 2}},
		{"duplicate levels", []float64{2, 2, 2, 2}, []float64{1, 2, 3, 4}},
	} {
		if _, err := FitUSL(tt.n, tt.x); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// A linear USL (σ = κ = 0) has no peak; a pure-contention one (κ = 0) neither.
func TestFitUSLLinear(t *testing.T) {
	n := []float64{1, 2, 4, 8, 16}
	x := []float64{10, 20, 40, 80, 160}
	u, err := FitUSL(n, x)
	if err != nil {
		t.Fatal(err)
	}
	if !scalar.EqualWithinAbsOrRel(float64(u.Lambda), 10, 1e-3, 1e-3) || u.Sigma > 1e-4 || u.Kappa > 1e-6 {
		t.Errorf("linear: %+v", u)
	}
}

func TestFitHinge(t *testing.T) {
	// Exact synthetic y = 5 + 3·min(x, 6.3): the breakpoint lies between data points.
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12}
	y := make([]float64, len(x))
	for i := range x {
		y[i] = 5 + 3*math.Min(x[i], 6.3)
	}
	h, err := fitHinge(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if !scalar.EqualWithinAbsOrRel(float64(h.Breakpoint), 6.3, 1e-9, 1e-9) || !scalar.EqualWithinAbsOrRel(float64(h.PlateauTPS), 23.9, 1e-9, 1e-9) ||
		!scalar.EqualWithinAbsOrRel(float64(h.Slope), 3, 1e-9, 1e-9) || !scalar.EqualWithinAbsOrRel(float64(h.R2), 1, 1e-12, 1e-12) {
		t.Errorf("hinge = %+v, want breakpoint 6.3, plateau 23.9, slope 3, R² 1", h)
	}
	// Geometric levels, breakpoint at 24 between 16 and 32.
	x = []float64{1, 2, 4, 8, 16, 32, 64, 128}
	for i := range x {
		y[i] = 100 * math.Min(x[i], 24)
	}
	h, _ = fitHinge(x, y[:len(x)])
	if !scalar.EqualWithinAbsOrRel(float64(h.Breakpoint), 24, 1e-9, 1e-9) {
		t.Errorf("geometric hinge breakpoint %v, want 24", h.Breakpoint)
	}
	if _, err := fitHinge([]float64{1, 1, 1}, []float64{1, 2, 3}); err == nil {
		t.Error("one distinct x: no error")
	}
}

func TestFitRamp(t *testing.T) {
	// Exact synthetic y = 200 + 40·max(0, x − 20.5).
	x := []float64{1, 2, 4, 8, 16, 24, 32, 48, 64}
	y := make([]float64, len(x))
	for i := range x {
		y[i] = 200 + 40*math.Max(0, x[i]-20.5)
	}
	r, err := fitRamp(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if !scalar.EqualWithinAbsOrRel(r.Breakpoint, 20.5, 1e-9, 1e-9) || !scalar.EqualWithinAbsOrRel(r.Base, 200, 1e-9, 1e-9) ||
		!scalar.EqualWithinAbsOrRel(r.Slope, 40, 1e-9, 1e-9) {
		t.Errorf("ramp = %+v, want breakpoint 20.5, base 200, slope 40", r)
	}
}
