package sweep

import (
	"math"
	"sort"
	"time"

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
	return ciHalfWidthRel, trendP, ciHalfWidthRel <= ciTarget && (trendP > TrendAlpha || drift <= ciTarget)
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

// bins splits the window [w0, w1) (Unix nanoseconds) into n equal slices; slice i is
// [w0 + (w1−w0)·i/n, w0 + (w1−w0)·(i+1)/n) with integer division.
type bins struct {
	w0, w1 int64
	n      int64
}

// bound returns the start of slice i (i = n gives w1).
func (b bins) bound(i int64) int64 { return b.w0 + (b.w1-b.w0)*i/b.n }

// index returns the slice holding t, which must be in [w0, w1).
func (b bins) index(t int64) int64 {
	i := (t - b.w0) * b.n / (b.w1 - b.w0)
	// Integer division of the bounds can put t one slice off; correct it.
	for i > 0 && t < b.bound(i) {
		i--
	}
	for i < b.n-1 && t >= b.bound(i+1) {
		i++
	}
	return i
}

// TokensInWindow returns the output tokens of rec that arrived in the window [w0, w1) (Unix
// nanoseconds) and adds each to its slice of slices: len(slices) equal slices of the window,
// slice j covering [w0 + j·(w1−w0)/n, w0 + (j+1)·(w1−w0)/n). It is the one definition of the
// tokens of a window (DESIGN §1) that the steady-state test, the live statistics and analysis
// all use. A record with Chunks carries OutputTokens ÷ len(Chunks) tokens at each chunk's
// arrival, Sent + offset (one per chunk when OutputTokens is 0); chunk offsets are taken to
// ascend, and any that do not are skipped, never misplaced. A record without Chunks has its
// OutputTokens tokens arrive evenly spaced from Sent+TTFT to Sent+E2E (all at Sent+TTFT when
// there is one or the two coincide); one without content (TTFT 0) has none. Records of every
// status count: their tokens did arrive. It returns 0 when slices is empty or the window is.
func TokensInWindow(rec *Record, w0, w1 int64, slices []float64) float64 {
	n := len(slices)
	if n == 0 || w1 <= w0 {
		return 0
	}
	// Offsets from w0 keep float64 exact to the nanosecond (Unix nanoseconds are not).
	span := float64(w1 - w0)
	sliceNS := span / float64(n)
	slot := func(rel int64) int { return min(int(float64(rel)/sliceNS), n-1) }
	nOut := rec.OutputTokens
	if c := len(rec.Chunks); c > 0 {
		k := 1.0
		if nOut > 0 {
			k = float64(nOut) / float64(c)
		}
		at := func(j int) int64 { return rec.Sent + rec.Chunks[j]*int64(time.Microsecond) }
		var got float64
		for j := sort.Search(c, func(j int) bool { return at(j) >= w0 }); j < c; j++ {
			t := at(j)
			if t >= w1 {
				break
			}
			if t < w0 {
				continue
			}
			slices[slot(t-w0)] += k
			got += k
		}
		return got
	}
	if nOut <= 0 || rec.TTFT <= 0 {
		return 0
	}
	a := rec.Sent + int64(rec.TTFT) - w0
	e := rec.Sent + int64(rec.E2E) - w0
	if nOut == 1 || e <= a {
		if a < 0 || a >= w1-w0 {
			return 0
		}
		slices[slot(a)] += float64(nOut)
		return float64(nOut)
	}
	t0, t1 := float64(a), float64(e)
	d := (t1 - t0) / float64(nOut-1)
	// count is the number of j in [0, nOut) with t0 + j·d in [lo, hi).
	count := func(lo, hi float64) float64 {
		jlo := math.Max(math.Ceil((lo-t0)/d), 0)
		jhi := math.Min(math.Ceil((hi-t0)/d), float64(nOut))
		return math.Max(jhi-jlo, 0)
	}
	// Only the slices [t0, t1] touches (widened by one each side against rounding at the
	// edges) can receive tokens: O(slices spanned) per record. Clamped as floats first so that
	// no conversion to int overflows.
	first := int(math.Min(math.Max(math.Floor(t0/sliceNS)-1, 0), float64(n)))
	last := int(math.Min(math.Max(math.Floor(t1/sliceNS)+1, -1), float64(n-1)))
	var got float64
	for j := first; j <= last; j++ {
		lo, hi := float64(j)*sliceNS, float64(j+1)*sliceNS
		if j == n-1 {
			hi = span
		}
		c := count(lo, hi)
		slices[j] += c
		got += c
	}
	return got
}

// SliceTokens returns the output tokens that arrived in each of n equal slices of the window
// [w0, w1) (Unix nanoseconds), from every record (including ones sent before w0 or finishing
// after w1). It returns nil when n < 1 or the window is empty.
func SliceTokens(records []Record, w0, w1 int64, n int) []float64 {
	if n < 1 || w1 <= w0 {
		return nil
	}
	if int64(n) > w1-w0 {
		n = int(w1 - w0)
	}
	dst := make([]float64, n)
	for i := range records {
		TokensInWindow(&records[i], w0, w1, dst)
	}
	return dst
}

// SliceTPS returns the output tokens/s of each of n equal slices of the window [w0, w1): the
// tokens that arrived in the slice ÷ the slice length in seconds.
func SliceTPS(records []Record, w0, w1 int64, n int) []float64 {
	tok := SliceTokens(records, w0, w1, n)
	sec := float64(w1-w0) / float64(len(tok)) / 1e9 // as window.sliceTPS computes it
	for i := range tok {
		tok[i] /= sec
	}
	return tok
}

// WindowOutputTokens returns the output tokens that arrived inside [w0, w1), from every
// record.
func WindowOutputTokens(records []Record, w0, w1 int64) float64 {
	var sum float64
	for _, v := range SliceTokens(records, w0, w1, 1) {
		sum += v
	}
	return sum
}

// LevelOutputTPS is the output tokens/s of the window [w0, w1): tokens whose chunk arrived
// inside the window ÷ (w1 − w0) in seconds (DESIGN §1). It is 0 for an empty window.
func LevelOutputTPS(records []Record, w0, w1 int64) float64 {
	if w1 <= w0 {
		return 0
	}
	return WindowOutputTokens(records, w0, w1) / time.Duration(w1-w0).Seconds()
}

// WindowQPS is the number of successful requests that completed inside [w0, w1) ÷ (w1 − w0)
// in seconds (DESIGN §1). It is 0 for an empty window.
func WindowQPS(records []Record, w0, w1 int64) float64 {
	if w1 <= w0 {
		return 0
	}
	n := 0
	for i := range records {
		if d := records[i].Done(); records[i].OK() && d >= w0 && d < w1 {
			n++
		}
	}
	return float64(n) / time.Duration(w1-w0).Seconds()
}

// AchievedConcurrency is the time-average number of requests in flight over [w0, w1): the sum
// of each record's overlap of [Sent, Done) with the window ÷ (w1 − w0) (DESIGN §1). It is 0
// for an empty window.
func AchievedConcurrency(records []Record, w0, w1 int64) float64 {
	if w1 <= w0 {
		return 0
	}
	var busy float64
	for i := range records {
		lo, hi := max(records[i].Sent, w0), min(records[i].Done(), w1)
		if hi > lo {
			busy += float64(hi - lo)
		}
	}
	return busy / float64(w1-w0)
}

// quantile returns the p-quantile (0 ≤ p ≤ 1) of sorted by linear interpolation between
// closest ranks (R type 7, numpy.percentile's default). sorted must be ascending and
// non-empty.
func quantile(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// durationQuantile returns the p-quantile (R type 7) of ds, 0 when ds is empty. It sorts ds.
func durationQuantile(ds []float64, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Float64s(ds)
	return time.Duration(quantile(ds, p))
}
