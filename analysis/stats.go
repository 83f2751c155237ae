package analysis

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/kneecap/kneecap/record"
)

// Percentile returns the p-th percentile (p in [0, 100]) of sorted, an ascending slice, by
// linear interpolation between closest ranks (numpy.percentile's default, R's quantile type
// 7): record.Percentile, the one definition the sweep's client self-check uses too. It returns
// NaN for an empty slice or a p outside [0, 100] or NaN.
func Percentile(sorted []float64, p float64) float64 { return record.Percentile(sorted, p) }

// LatencyOf summarises values (milliseconds): the mean and the type-7 percentiles of
// Percentile. It sorts values in place. Non-finite values must have been filtered by the
// caller.
func LatencyOf(values []float64) Latency {
	if len(values) == 0 {
		return NoLatency()
	}
	slices.Sort(values)
	var sum float64
	for _, v := range values {
		sum += v
	}
	return Latency{
		Mean: Float(sum / float64(len(values))),
		P50:  Float(Percentile(values, 50)),
		P90:  Float(Percentile(values, 90)),
		P95:  Float(Percentile(values, 95)),
		P99:  Float(Percentile(values, 99)),
	}
}

// weighted is a value with a multiplicity (an ITL gap of a k-token chunk counts k times).
type weighted struct{ v, w float64 }

// weightedLatency summarises a multiset given as (value, multiplicity) pairs. With integer
// multiplicities the percentiles equal Percentile over the expanded multiset (type 7); with
// fractional ones the ranks are interpolated over cumulative weight. It sorts xs in place.
func weightedLatency(xs []weighted) Latency {
	if len(xs) == 0 {
		return NoLatency()
	}
	slices.SortFunc(xs, func(a, b weighted) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	cum := make([]float64, len(xs))
	var total, sum float64
	for i, x := range xs {
		total += x.w
		sum += x.w * x.v
		cum[i] = total
	}
	if total <= 0 {
		return NoLatency()
	}
	// at returns the element of 0-based rank r of the expanded multiset.
	at := func(r float64) float64 {
		i, _ := slices.BinarySearchFunc(cum, r, func(c, t float64) int {
			if c <= t {
				return -1
			}
			return 1
		})
		if i >= len(xs) {
			i = len(xs) - 1
		}
		return xs[i].v
	}
	pct := func(p float64) Float {
		h := math.Max(total-1, 0) * p / 100
		lo := math.Floor(h)
		a, b := at(lo), at(lo+1)
		return Float(a + (h-lo)*(b-a))
	}
	return Latency{Mean: Float(sum / total), P50: pct(50), P90: pct(90), P95: pct(95), P99: pct(99)}
}

// meanCI95 returns the mean of xs and the half-width of its 95% confidence interval,
// t(0.975, n−1)·s/√n (batch means: each x is one slice's mean). The half-width is NaN for
// fewer than two values.
func meanCI95(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(float64(n))
}

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// finiteSorted returns the pairs (x[i], y[i]) whose members are both finite, ordered by x
// (stable, so pairs with equal x keep their input order). x and y must have equal length.
func finiteSorted(x, y []float64) (xs, ys []float64) {
	idx := make([]int, 0, len(x))
	for i := range x {
		if finite(x[i]) && finite(y[i]) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(x[i], x[j]) })
	xs = make([]float64, len(idx))
	ys = make([]float64, len(idx))
	for k, i := range idx {
		xs[k], ys[k] = x[i], y[i]
	}
	return xs, ys
}

// scaleFit fits x ≈ c·g(i) by least squares in the scale c alone (closed form
// c = Σx·g ÷ Σg²) and returns the residual sum of squares and c; +Inf and NaN when every
// g(i) is 0. The USL and batch fits profile their linear scale (λ, 1/α) out this way.
func scaleFit(x []float64, g func(i int) float64) (sse, c float64) {
	var sxg, sgg float64
	for i := range x {
		gi := g(i)
		sxg += x[i] * gi
		sgg += gi * gi
	}
	if !(sgg > 0) {
		return math.Inf(1), math.NaN()
	}
	c = sxg / sgg
	for i := range x {
		d := x[i] - c*g(i)
		sse += d * d
	}
	return sse, c
}
