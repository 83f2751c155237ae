package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// doublingKnee returns the smallest N in [lo, hi] with X(2N)/X(N) − 1 < gain, solved by a
// log-spaced scan and bisection. status is "found", "below" (already below gain at lo) or
// "none" (still ≥ gain at hi).
func doublingKnee(X func(float64) float64, lo, hi, gain float64) (float64, string) {
	g := func(n float64) float64 {
		xn := X(n)
		if !(xn > 0) {
			return math.NaN()
		}
		return X(2*n)/xn - 1 - gain
	}
	if !(hi >= lo) || !(lo > 0) {
		return math.NaN(), "none"
	}
	if v := g(lo); finite(v) && v < 0 {
		return lo, "below"
	}
	const steps = 256
	prev := lo
	for i := 1; i <= steps; i++ {
		n := lo * math.Pow(hi/lo, float64(i)/steps)
		if v := g(n); finite(v) && v < 0 {
			l, h := prev, n
			for range 60 {
				m := math.Sqrt(l * h)
				if v := g(m); finite(v) && v < 0 {
					h = m
				} else {
					l = m
				}
			}
			return h, "found"
		}
		prev = n
	}
	return math.NaN(), "none"
}

// knee reads the headline knee from the best-fitting throughput curve, with its bootstrap
// interval, the other methods' estimates and the warnings when they disagree.
func (a *analyzer) knee() {
	if len(a.fit) < MinFitLevels {
		return
	}
	x, y := a.xy()
	if !a.chooseCurve() {
		a.warn(noKneeModel())
		return
	}
	method := a.curveMethod
	lo, hi := x[0], x[len(x)-1]/2
	if hi < lo {
		a.warn(kneeSpan(x[0], x[len(x)-1]))
		return
	}
	gain := a.opts.KneeGain
	k, status := doublingKnee(a.curve, lo, hi, gain)
	if status == "none" {
		a.warn(kneeBeyond((a.curve(x[len(x)-1])/a.curve(hi)-1)*100, x[len(x)-1], gain))
		a.bootstrapUSL(x, y, gain, lo, hi, false)
		return
	}
	if status == "below" {
		a.warn(kneeAtBottom(lo, gain))
	}
	knee := &Knee{Concurrency: Float(k), TPS: Float(a.curve(k)), Method: method, Interval: [2]Float{NaN(), NaN()},
		Others: a.otherKnees()}
	iv := a.bootstrapUSL(x, y, gain, lo, hi, method == MethodUSL)
	switch method {
	case MethodHinge:
		iv = a.bootstrapCurve(x, y, gain, lo, hi, a.hinge.At, func(x, ys []float64) (func(float64) float64, error) {
			h, err := FitHinge(x, ys)
			return h.At, err
		})
	case MethodBatch:
		iv = a.bootstrapCurve(x, y, gain, lo, hi, a.batch.At, func(x, ys []float64) (func(float64) float64, error) {
			b, err := FitBatch(x, ys)
			return b.At, err
		})
	}
	knee.Interval = iv
	a.compareKnees(knee, gain)
	if lo, hi, ok := bracket(x, k); ok && hi > maxLevelGap*lo {
		a.warn(kneeGap(k, lo, hi))
	}
	knee.Evidence = a.evidence(k)
	a.res.Knee = knee
}

// chooseCurve sets the curve the headline knee is read from and its method: the
// best-fitting (highest R², all three have three parameters) of the USL (when R² ≥
// USLMinR2), the batch-limited Amdahl curve and the hinge; ties go in that order. It reports
// false when none was fitted.
func (a *analyzer) chooseCurve() bool {
	bestR2 := math.Inf(-1)
	if a.usl != nil && float64(a.usl.R2) >= USLMinR2 {
		u := *a.usl
		a.curve, a.curveMethod, bestR2 = u.At, MethodUSL, float64(u.R2)
	}
	// R² is NaN only for constant throughput, which every model fits: rank it as 0.
	r2 := func(v Float) float64 {
		if v.OK() {
			return float64(v)
		}
		return 0
	}
	if a.batch != nil && r2(a.batch.R2) > bestR2 {
		b := *a.batch
		a.curve, a.curveMethod, bestR2 = b.At, MethodBatch, r2(b.R2)
	}
	if a.hinge != nil && r2(a.hinge.R2) > bestR2 {
		h := *a.hinge
		a.curve, a.curveMethod = h.At, MethodHinge
	}
	return a.curve != nil
}

// otherKnees returns each method's estimate for Knee.Others: the USL peak N* (when the curve
// has one), the hinge breakpoint, the batch limit S and the Kneedle knee.
func (a *analyzer) otherKnees() map[Method]Float {
	others := map[Method]Float{}
	if a.usl != nil && a.usl.PeakConcurrency.OK() {
		others[MethodUSL] = a.usl.PeakConcurrency
	}
	if a.hinge != nil {
		others[MethodHinge] = a.hinge.Breakpoint
	}
	if a.batch != nil {
		others[MethodBatch] = a.batch.Limit
	}
	if kn := a.res.Throughput.Kneedle; kn != nil {
		others[MethodKneedle] = kn.Knee
	}
	return others
}

// compareKnees warns about each estimate of knee.Others more than a factor disagreement from
// the headline knee.
func (a *analyzer) compareKnees(knee *Knee, gain float64) {
	k := float64(knee.Concurrency)
	for _, m := range kneeMethods {
		v, ok := knee.Others[m]
		if !ok || !v.OK() || !(v > 0) {
			continue
		}
		// The USL peak is where a retrograde curve turns down, not a knee; past a hard
		// plateau it is an extrapolation of a worse model, so it is compared only when USL
		// is the curve the headline knee was read from.
		if m == MethodUSL && knee.Method != MethodUSL {
			continue
		}
		if r := float64(v) / k; r > disagreement || r < 1/disagreement {
			a.warn(kneeDisagree(m, float64(v), k, knee.Method, gain))
		}
	}
}

// maxLevelGap is the widest ratio between neighbouring measured levels that a knee or a TTFT
// blow-up may fall between without a warning: one doubling (with room for rounding).
const maxLevelGap = 2 * (1 + 1e-9)

// bracket returns the measured levels around v: lo, the largest of xs (ascending) < v, and
// hi, the smallest > v; ok is false when v is a measured level itself or outside
// (xs[0], xs[len−1]).
func bracket(xs []float64, v float64) (lo, hi float64, ok bool) {
	i := sort.SearchFloat64s(xs, v) // first index with xs[i] ≥ v
	if i == 0 || i >= len(xs) || xs[i] == v {
		return 0, 0, false
	}
	return xs[i-1], xs[i], true
}

// evidence quotes the server metrics of the measured level nearest to c (on log scale),
// naming only the quantities the server exposes.
func (a *analyzer) evidence(c float64) string {
	var best *Level
	bd := math.Inf(1)
	for _, p := range a.pts {
		if p.lv.Server == nil {
			continue
		}
		if d := math.Abs(math.Log(p.c / c)); d < bd {
			best, bd = p.lv, d
		}
	}
	if best == nil {
		return ""
	}
	s := best.Server
	var parts, signs []string
	if s.MeanRunning.OK() {
		parts = append(parts, fmt.Sprintf("mean running %.1f", float64(s.MeanRunning)))
	}
	if s.MeanWaiting.OK() {
		parts = append(parts, fmt.Sprintf("mean waiting %.1f", float64(s.MeanWaiting)))
		if s.MeanWaiting > 0 {
			signs = append(signs, "requests queue")
		}
	}
	if s.MaxKVUsage.OK() {
		parts = append(parts, fmt.Sprintf("max KV usage %.0f%%", float64(s.MaxKVUsage)*100))
		if s.MaxKVUsage >= 0.95 {
			signs = append(signs, "KV cache full")
		}
	}
	if s.Preemptions.OK() && s.Preemptions > 0 {
		parts = append(parts, fmt.Sprintf("%.0f preemptions", float64(s.Preemptions)))
		signs = append(signs, "preemptions")
	}
	if len(parts) == 0 {
		return ""
	}
	out := fmt.Sprintf("server at concurrency %d: %s", best.Concurrency, strings.Join(parts, ", "))
	if len(signs) > 0 {
		out += " (saturation: " + strings.Join(signs, ", ") + ")"
	}
	return out
}
