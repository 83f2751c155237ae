package sweep

import (
	"math"

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

// SteadyRate is the steady-state test of an arrival-rate level's window (DESIGN §3.9): no
// material trend, as SteadyState, with the confidence interval reported but not judged. The
// slices of an open loop count Poisson arrivals, whose noise no window length the level can
// afford brings within a closed loop's ci_target (at 4 requests/s, 1 s slices vary by ±50%: a
// 10-slice CI of ±36%), and the rate, not the mean TPS, is what the level sets; whether the
// server kept up is the analysis's sustainable verdict on the backlog (§4.15).
func SteadyRate(sliceTPS []float64, ciTarget float64) (ciHalfWidthRel, trendP float64, steady bool) {
	return steadyTest(sliceTPS, ciTarget, false)
}

// steadyTest is SteadyState, the interval judged only when withCI.
func steadyTest(sliceTPS []float64, ciTarget float64, withCI bool) (ciHalfWidthRel, trendP float64, steady bool) {
	n := len(sliceTPS)
	if n < 3 {
		return math.NaN(), math.NaN(), false
	}
	for _, v := range sliceTPS {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return math.NaN(), math.NaN(), false
		}
	}
	mean, sd := stat.MeanStdDev(sliceTPS, nil)
	if !(mean > 0) {
		return math.NaN(), math.NaN(), false
	}
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-ciLevel)/2)
	ciHalfWidthRel = tq * sd / math.Sqrt(float64(n)) / mean
	var beta float64
	trendP, beta = slopeP(sliceTPS)
	drift := math.Abs(beta) * float64(n-1) / mean
	return ciHalfWidthRel, trendP, (ciHalfWidthRel <= ciTarget || !withCI) && (trendP > TrendAlpha || drift <= ciTarget)
}

// slopeP returns the two-sided p-value of the OLS slope of y against x = 0, 1, …, n−1, and
// the slope.
func slopeP(y []float64) (p, slope float64) {
	n := len(y)
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i)
	}
	alpha, beta := stat.LinearRegression(x, y, nil, false)
	xm := float64(n-1) / 2
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
		if math.Abs(beta)*float64(n) <= eps {
			return 1, beta
		}
		return 0, beta
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	t := math.Abs(beta / se)
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}
	return 2 * dist.Survival(t), beta
}
