package analysis

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// Reference values: numpy.percentile(a, p) with the default method="linear" (R type 7);
// [15, 20, 35, 40, 50] p40 = 29 is the worked example of the C = 1 variant in Wikipedia's
// "Percentile" article.
func TestPercentile(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		p    float64
		want float64
		tol  float64
	}{
		{"1..4 p50", []float64{1, 2, 3, 4}, 50, 2.5, 1e-12},
		{"1..4 p90", []float64{1, 2, 3, 4}, 90, 3.7, 1e-12},
		{"1..4 p99", []float64{1, 2, 3, 4}, 99, 3.97, 1e-12},
		{"1..4 p25", []float64{1, 2, 3, 4}, 25, 1.75, 1e-12},
		{"1..4 p0", []float64{1, 2, 3, 4}, 0, 1, 0},
		{"1..4 p100", []float64{1, 2, 3, 4}, 100, 4, 0},
		{"wikipedia p40", []float64{15, 20, 35, 40, 50}, 40, 29, 1e-12},
		{"single", []float64{7}, 95, 7, 0},
		{"empty", nil, 50, math.NaN(), 0},
		{"p out of range", []float64{1, 2}, 101, math.NaN(), 0},
	}
	for _, tt := range tests {
		got := Percentile(tt.in, tt.p)
		if math.IsNaN(tt.want) {
			if !math.IsNaN(got) {
				t.Errorf("%s: Percentile = %v, want NaN", tt.name, got)
			}
			continue
		}
		if !scalar.EqualWithinAbsOrRel(got, tt.want, tt.tol, tt.tol) {
			t.Errorf("%s: Percentile = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A weighted multiset with integer weights must give the percentiles of its expansion.
func TestWeightedLatencyMatchesExpansion(t *testing.T) {
	xs := []weighted{{3, 2}, {1, 1}, {2, 3}, {10, 1}}
	expanded := []float64{1, 2, 2, 2, 3, 3, 10}
	got := weightedLatency(xs)
	want := LatencyOf(expanded)
	for _, c := range []struct {
		name   string
		got, w Float
	}{{"mean", got.Mean, want.Mean}, {"p50", got.P50, want.P50}, {"p90", got.P90, want.P90}, {"p95", got.P95, want.P95}, {"p99", got.P99, want.P99}} {
		if !scalar.EqualWithinAbsOrRel(float64(c.got), float64(c.w), 1e-12, 1e-12) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.w)
		}
	}
}

// t(0.975, 9) = 2.262157 (any Student's t table).
func TestMeanCI95(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	m, h := meanCI95(xs)
	sd := math.Sqrt(82.5 / 9)
	if !scalar.EqualWithinAbsOrRel(m, 5.5, 1e-12, 1e-12) || !scalar.EqualWithinAbsOrRel(h, 2.262157*sd/math.Sqrt(10), 1e-5, 1e-5) {
		t.Errorf("meanCI95 = %v ± %v", m, h)
	}
}
