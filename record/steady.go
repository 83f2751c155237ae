package record

import (
	"math"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Steady-state test parameters (DESIGN §3).
const (
	// MinSlices is the smallest number of equal slices a measurement window is split into for
	// the steady-state test. The slice length of a level is Duration ÷ MinSlices.
	MinSlices = 10
	// TrendAlpha is the significance level of the trend test: a slope with p ≤ TrendAlpha
	// means the window is still drifting.
	TrendAlpha = 0.05
	// ciLevel is the two-sided confidence level of the interval on the mean slice TPS.
	ciLevel = 0.95
)

// SteadyState is the steady-state test of a measurement window split into equal slices with
// output tokens/s sliceTPS[i] each (DESIGN §3).
//
// ciHalfWidthRel is the half-width of the 95% confidence interval of the mean slice TPS,
// relative to the mean: t(0.975, n−1) · s / √n ÷ mean, with s the sample standard deviation
// (Student t, n−1 degrees of freedom). trendP is the two-sided p-value of the ordinary
// least-squares slope of sliceTPS against the slice index (t-test of β = 0 with n−2 degrees of
// freedom, se(β) = √(SSE/(n−2) / Σ(x−x̄)²)). steady is ciHalfWidthRel ≤ ciTarget and no
// material trend: the trend is ignored when it is not significant (trendP > TrendAlpha) or
// when it is too small to matter — the fitted change across the window, |β|·(n−1) ÷ mean, is
// within ciTarget. (With slices a fraction of a percent apart, as against a deterministic
// server, a drift of 0.3% over the window is statistically significant and practically nil;
// calling such a level unsteady would only waste max_duration.)
//
// With fewer than 3 slices, a non-positive mean or non-finite input the test is undefined:
// ciHalfWidthRel and trendP are NaN and steady is false. A series with zero variance has
// ciHalfWidthRel 0 and trendP 1.
func SteadyState(sliceTPS []float64, ciTarget float64) (ciHalfWidthRel, trendP float64, steady bool) {
	return steadyTest(sliceTPS, ciTarget, true)
}

// steadyRate is the steady-state test of an arrival-rate level's window (DESIGN §3.9): no
// material trend, as SteadyState, with the confidence interval reported but not judged. The
// slices of an open loop count Poisson arrivals, whose noise no window length the level can
// afford brings within a closed loop's ci_target (at 4 requests/s, 1 s slices vary by ±50%: a
// 10-slice CI of ±36%), and the rate, not the mean TPS, is what the level sets; whether the
// server kept up is the analysis's sustainable verdict on the backlog (§4.15).
func steadyRate(sliceTPS []float64, ciTarget float64) (ciHalfWidthRel, trendP float64, steady bool) {
	return steadyTest(sliceTPS, ciTarget, false)
}

// steadyTest is SteadyState, the interval judged only when withCI.
func steadyTest(sliceTPS []float64, ciTarget float64, withCI bool) (ciHalfWidthRel, trendP float64, steady bool) {
	d := SteadyDetails(sliceTPS)
	if !d.Defined() {
		return math.NaN(), math.NaN(), false
	}
	return d.CIHalfWidth, d.TrendP, d.SteadyAt(ciTarget, ciTarget, !withCI)
}

// SteadyAt is the steady-state verdict of d: defined, no trend larger than driftTarget
// across the window (Trending) and, unless rate (steadyRate), a CI half-width within
// ciTarget. The CI target may be wider than ci_target (CITarget: what the window's requests
// can resolve); a drift's materiality is ci_target's whatever the noise.
func (d Steadiness) SteadyAt(driftTarget, ciTarget float64, rate bool) bool {
	return d.Defined() && !d.Trending(driftTarget) && (rate || d.CIHalfWidth <= ciTarget)
}

// Steadiness is what the steady-state test measures of a window's slices: the relative CI
// half-width of the mean slice TPS, the trend's two-sided p-value and the fitted change across
// the window relative to the mean, |β|·(n−1) ÷ mean (DESIGN §3.2). Every field is NaN when the
// test is undefined (fewer than 3 slices, a non-positive mean, non-finite input).
type Steadiness struct {
	CIHalfWidth, TrendP, Drift float64
}

// Defined reports whether the test could be computed.
func (d Steadiness) Defined() bool { return !math.IsNaN(d.CIHalfWidth) && !math.IsNaN(d.TrendP) }

// Trending reports a material trend: significant (TrendP ≤ TrendAlpha) and larger across the
// window than target. An undefined test is not trending (nothing was measured to drift).
func (d Steadiness) Trending(target float64) bool {
	return d.Defined() && d.TrendP <= TrendAlpha && d.Drift > target
}

// SteadyDetails measures sliceTPS for the steady-state test (see SteadyState).
func SteadyDetails(sliceTPS []float64) Steadiness {
	nan := Steadiness{math.NaN(), math.NaN(), math.NaN()}
	n := len(sliceTPS)
	if n < 3 {
		return nan
	}
	for _, v := range sliceTPS {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nan
		}
	}
	mean, sd := stat.MeanStdDev(sliceTPS, nil)
	if !(mean > 0) {
		return nan
	}
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-ciLevel)/2)
	p, beta := slopeP(sliceTPS)
	return Steadiness{CIHalfWidth: tq * sd / math.Sqrt(float64(n)) / mean, TrendP: p, Drift: math.Abs(beta) * float64(n-1) / mean}
}

// slopeP returns the two-sided p-value of the OLS slope of y against x = 0, 1, …, n−1, and
// the slope.
func slopeP(y []float64) (p, slope float64) {
	x := make([]float64, len(y))
	for i := range x {
		x[i] = float64(i)
	}
	return LinearTrend(x, y)
}

// LinearTrend returns the two-sided p-value of the OLS slope of y on x (t-test of β = 0 with
// n − 2 degrees of freedom) and the slope; x must not be constant and n ≥ 3.
func LinearTrend(x, y []float64) (p, slope float64) {
	n := len(y)
	alpha, beta := stat.LinearRegression(x, y, nil, false)
	xm := stat.Mean(x, nil)
	var sxx, sse float64
	for i, yi := range y {
		d := x[i] - xm
		sxx += d * d
		r := yi - (alpha + beta*x[i])
		sse += r * r
	}
	// A residual sum of squares at rounding-error level is a perfect line: flat (p = 1) when
	// the slope is negligible too, otherwise a certain trend (p = 0).
	scale := 0.0
	for _, yi := range y {
		scale = math.Max(scale, math.Abs(yi))
	}
	eps := 1e-12 * scale
	if sse <= eps*eps*float64(n) {
		if math.Abs(beta)*(floats.Max(x)-floats.Min(x)) <= eps {
			return 1, beta
		}
		return 0, beta
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	t := math.Abs(beta / se)
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}
	return 2 * dist.Survival(t), beta
}

// CompletionStats accumulates a window's successful completions for ResolvableCI: their
// number and the sums of their output tokens n and E2E e (seconds), of n², e² and n·e.
type CompletionStats struct {
	N                               int
	SumN, SumE, SumNN, SumEE, SumNE float64
}

// Add counts a completion of tokens output tokens that took e2e.
func (c *CompletionStats) Add(tokens int, e2e time.Duration) {
	n, e := float64(tokens), e2e.Seconds()
	c.N++
	c.SumN += n
	c.SumE += e
	c.SumNN += n * n
	c.SumEE += e * e
	c.SumNE += n * e
}

// Merge adds o's completions to c.
func (c *CompletionStats) Merge(o CompletionStats) {
	c.N += o.N
	c.SumN += o.SumN
	c.SumE += o.SumE
	c.SumNN += o.SumNN
	c.SumEE += o.SumEE
	c.SumNE += o.SumNE
}

// ResolvableCI is the relative 95% CI half-width of the window's output rate that its k
// completions can resolve, each an independent draw of (n_i, e_i): the ratio estimator R̂ =
// Σn ÷ Σe has the relative standard error sd(n_i − R̂·e_i) ÷ (mean(n)·√k), times t(0.975, k−1)
// (DESIGN §3.2). A server whose requests vary in speed — a CPU engine at concurrency 1 — gives
// no closer interval in a window of k requests however its slices fall; a deterministic one
// resolves any target (0). NaN with fewer than 3 completions or no output.
func (c CompletionStats) ResolvableCI() float64 {
	k := float64(c.N)
	if c.N < 3 || !(c.SumN > 0) || !(c.SumE > 0) {
		return math.NaN()
	}
	r := c.SumN / c.SumE
	// Σ(n − r·e)² − (Σ(n − r·e))²/k, where Σ(n − r·e) = 0 by the choice of r.
	ss := c.SumNN - 2*r*c.SumNE + r*r*c.SumEE
	if ss <= 1e-9*c.SumNN {
		ss = 0 // the sums' rounding, not a spread: the one-pass form cancels
	}
	sd := math.Sqrt(ss / (k - 1))
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k - 1}.Quantile(1 - (1-ciLevel)/2)
	return tq * sd / (c.SumN / k) / math.Sqrt(k)
}

// CITarget returns the CI half-width a window of slices slices whose completions are c is held
// to: ciTarget, or, when its requests cannot resolve that, their ResolvableCI times the factor
// by which a stationary window's slice interval exceeds it only 5% of the time — √F(0.95;
// slices − 1, k − 1), both being estimates of one variance with those degrees of freedom
// (about 1.4 for 10 slices and 50 requests).
func CITarget(ciTarget float64, slices int, c CompletionStats) float64 {
	res := c.ResolvableCI()
	if !(res > 0) || slices < 2 {
		return ciTarget
	}
	f := distuv.F{D1: float64(slices - 1), D2: float64(c.N - 1)}.Quantile(ciLevel)
	return math.Max(ciTarget, res*math.Sqrt(f))
}
