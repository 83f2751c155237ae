package sweep

import (
	"math"
	"sort"
)

// ksTest is the one-sample Kolmogorov–Smirnov test of the sample x against the continuous
// distribution whose CDF is cdf: the statistic D, the largest distance between x's empirical
// CDF and cdf, and its p-value from the Kolmogorov distribution with Stephens' correction for
// a finite sample, Q_KS((√n + 0.12 + 0.11/√n)·D) (M. A. Stephens, "Use of the
// Kolmogorov–Smirnov, Cramér–von Mises and related statistics without extensive tables",
// J. R. Statist. Soc. B 32(1), 1970; Numerical Recipes, 3rd ed., §14.3.3). gonum's stat
// package has the two-sample statistic only. x is sorted in place; NaN for an empty x.
func ksTest(x []float64, cdf func(float64) float64) (d, p float64) {
	n := len(x)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	sort.Float64s(x)
	for i, v := range x {
		f := cdf(v)
		d = max(d, float64(i+1)/float64(n)-f, f-float64(i)/float64(n))
	}
	sn := math.Sqrt(float64(n))
	return d, kolmogorovQ((sn + 0.12 + 0.11/sn) * d)
}

// kolmogorovQ is the Kolmogorov distribution's survival function, Q_KS(λ) = 2 Σ_{j≥1}
// (−1)^{j−1} exp(−2j²λ²), the limit of P(√n·D > λ). Below λ = 1.18 that series converges
// slowly and the equivalent 1 − √(2π)/λ Σ_{j≥1} exp(−(2j−1)²π²/(8λ²)) is summed instead
// (Numerical Recipes, 3rd ed., §6.14).
func kolmogorovQ(lambda float64) float64 {
	switch {
	case math.IsNaN(lambda):
		return math.NaN()
	case lambda <= 0:
		return 1
	case lambda < 1.18:
		var s float64
		for j := 1; j < 100; j++ {
			o := float64(2*j - 1)
			t := math.Exp(-o * o * math.Pi * math.Pi / (8 * lambda * lambda))
			s += t
			if t < 1e-17*s {
				break
			}
		}
		return min(1, max(0, 1-math.Sqrt(2*math.Pi)/lambda*s))
	}
	var s float64
	sign := 1.0
	for j := 1; j < 100; j++ {
		t := math.Exp(-2 * float64(j*j) * lambda * lambda)
		s += sign * t
		sign = -sign
		if t < 1e-17 {
			break
		}
	}
	return min(1, max(0, 2*s))
}
