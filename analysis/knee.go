package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// knee reads the headline knee and the efficient point from the best-fitting throughput
// curve (DESIGN §4.3): the plateau onset of a sharp-knee fit whose plateau was measured
// (RulePlateauOnset), else the marginal-gain point (RuleMarginalGain); each with its
// bootstrap interval, the other methods' estimates and the warnings when they disagree.
func (a *analyzer) knee() {
	if len(a.fit) < minFitLevels {
		return
	}
	x, y := a.xy()
	if !a.chooseCurve() {
		a.warn(noKneeModel())
		return
	}
	method := a.curveMethod
	plateau, why := a.plateauRule(x, y)
	gain := a.opts.KneeGain
	ep := a.efficientPoint(x, plateau)
	if ep == nil && !plateau.OK() {
		// No headline: the marginal-gain point is the knee, and there is none.
		a.bootstrapUSL(x, y, gain, x[0], x[len(x)-1]/2, "")
		return
	}
	breaks, eff := a.intervals(x, y, plateau, ep != nil)
	if ep != nil {
		ep.Interval = eff
		a.res.EfficientPoint = ep
	}
	knee := &Knee{Method: method, Rule: RuleMarginalGain, RuleReason: why, Others: a.otherKnees()}
	if plateau.OK() {
		knee.Rule, knee.Concurrency, knee.TPS, knee.Interval = RulePlateauOnset, plateau, Float(a.curve(float64(plateau))), breaks
	} else {
		knee.Concurrency, knee.TPS, knee.Interval = ep.Concurrency, ep.TPS, ep.Interval
	}
	k := float64(knee.Concurrency)
	a.compareKnees(knee, gain)
	if lo, hi, ok := bracket(x, k); ok && hi > maxLevelGap*lo {
		a.warn(kneeGap(k, lo, hi))
	}
	knee.Evidence = a.evidence(k)
	a.res.Knee = knee
}

// chooseCurve sets the curve the headline knee is read from and its method: the
// best-fitting (highest R², all three have three parameters) of the USL (when R² ≥
// uslMinR2), the batch model and the hinge, ties in that order, except that the hinge wins
// over a fitted batch model only when it fits clearly better (hingeBetter). It reports false
// when none was fitted.
func (a *analyzer) chooseCurve() bool {
	bestR2 := math.Inf(-1)
	if a.usl != nil && float64(a.usl.R2) >= uslMinR2 {
		u := *a.usl
		a.curve, a.curveMethod, bestR2 = u.At, MethodUSL, float64(u.R2)
	}
	if a.batch != nil && rankR2(a.batch.R2) > bestR2 {
		b := *a.batch
		a.curve, a.curveMethod, bestR2 = b.At, MethodBatch, rankR2(b.R2)
	}
	if a.hinge != nil && rankR2(a.hinge.R2) > bestR2 && (a.batch == nil || hingeBetter(a.hinge.R2, a.batch.R2)) {
		h := *a.hinge
		a.curve, a.curveMethod = h.At, MethodHinge
	}
	return a.curve != nil
}

// rankR2 is R² for ranking the fits: NaN (constant throughput, which every model fits) as 0.
func rankR2(v Float) float64 {
	if v.OK() {
		return float64(v)
	}
	return 0
}

// hingeBetter reports whether the hinge (R² h) fits clearly better than the batch model (R²
// b): its unexplained share 1 − R² below hingeMargin times the batch model's, each floored at
// 1e-8 (a residual RMS of 0.01% of the throughputs' spread, below any measurement's noise,
// so that two exact fits tie). Both models are sharp knees; the batch model's rise is the
// physics of a batching step, and the hinge's straight line, on a rise that bends before its
// breakpoint, meets the plateau early (0.6–0.95·S on the simulator).
func hingeBetter(h, b Float) bool {
	u := func(v Float) float64 { return math.Max(1-rankR2(v), 1e-8) }
	return u(h) < hingeMargin*u(b)
}

// plateauRule decides the rule of the headline knee: it returns the breakpoint of the curve
// (the batch model's S, the hinge breakpoint) when the curve is a sharp-knee fit with R² ≥
// sharpMinR2, at least minRiseLevels valid levels below the breakpoint and minPlateauLevels
// above it, by more than RefineTolerance, and the plateau was measured flat: the measured
// throughput grows less than knee_gain per doubling across the plateau levels (from the level
// at the corner, within RefineTolerance of the breakpoint, when only one lies beyond). Else it
// returns NaN (the marginal-gain rule, with a warning when the curve was a sharp fit); why
// says which, as Knee.RuleReason. x and y are the valid levels' concurrencies and TPS.
func (a *analyzer) plateauRule(x, y []float64) (Float, string) {
	fits := a.fitR2s()
	var bp, r2 Float
	switch a.curveMethod {
	case MethodBatch:
		bp, r2 = a.batch.Limit, a.batch.R2
	case MethodHinge:
		bp, r2 = a.hinge.Breakpoint, a.hinge.R2
	default:
		return NaN(), fmt.Sprintf("the %s fits best (R² %s): a smooth curve, whose knee is where one more doubling adds less than %.0f%%",
			a.curveMethod.Label(), fits, a.opts.KneeGain*100)
	}
	name := breakpointName(a.curveMethod)
	// A level within RefineTolerance of the breakpoint is at the corner: it shows neither the
	// rise nor that the plateau stays flat.
	var below, above int
	first, last, corner := -1, -1, -1 // the plateau levels' first and last index; the last at the corner
	for i, c := range x {
		switch {
		case c < float64(bp)/(1+RefineTolerance):
			below++
		case c > float64(bp)*(1+RefineTolerance):
			above++
			if first < 0 {
				first = i
			}
			last = i
		default:
			corner = i
		}
	}
	if above == 1 {
		first = corner // one plateau level: its flatness is measured from the corner, if any
	}
	var fail string
	switch {
	case !bp.OK():
		fail = "its breakpoint is undefined"
	case a.curveMethod == MethodHinge && !(a.hinge.Slope > 0):
		fail = fmt.Sprintf("its slope %s is not positive: throughput does not rise to the breakpoint", a.hinge.Slope.Format())
	case !r2.OK():
		fail = "its R² is undefined"
	case rankR2(r2) < sharpMinR2:
		fail = fmt.Sprintf("it fits with R² %s only (< %g)", fmtR2(r2), sharpMinR2)
	case below < minRiseLevels:
		fail = fmt.Sprintf("%d valid level(s) lie more than %.0f%% below its %s %.3g (< %d): the rise to it was not measured",
			below, RefineTolerance*100, name, float64(bp), minRiseLevels)
	case above < minPlateauLevels:
		fail = fmt.Sprintf("%d valid level(s) lie more than %.0f%% above its %s %.3g (< %d): its plateau was not measured",
			above, RefineTolerance*100, name, float64(bp), minPlateauLevels)
	case first < 0:
		fail = fmt.Sprintf("only one valid level lies more than %.0f%% above its %s %.3g and none within %.0f%% of it: that the plateau stays flat was not measured",
			RefineTolerance*100, name, float64(bp), RefineTolerance*100)
	default:
		if g, lo := a.plateauGrowth(first, last); !(lo < a.opts.KneeGain) {
			fail = fmt.Sprintf("the measured throughput still grows %.0f%% per doubling (at least %.0f%% within the levels' 95%% CIs) from concurrency %g to %g, beyond its %s %.3g: no plateau was measured",
				g*100, lo*100, x[first], x[last], name, float64(bp))
		}
	}
	if fail != "" {
		a.warn(kneeNoPlateau(a.curveMethod, fail))
		return NaN(), fmt.Sprintf("the %s model fits best (R² %s) but %s, so the knee is where one more doubling adds less than %.0f%%",
			a.curveMethod.Label(), fits, fail, a.opts.KneeGain*100)
	}
	return bp, fmt.Sprintf("the %s model fits best (R² %s), a sharp knee, with %d valid levels below its %s and %d on the plateau beyond: the knee is the onset of that plateau",
		a.curveMethod.Label(), fits, below, name, above)
}

// plateauGrowth is the measured throughput's growth per doubling from the fitted level i to
// the fitted level j, and the least growth within the noise: from y_i to y_j less the 95%
// half-width of their difference, √(ci_i² + ci_j²) (independent levels); the growth itself
// when a level has no CI. Levels 20% apart magnify their noise 3.8× per doubling (1 ÷
// log2 1.2): on a 2-core machine 5 and 6 streams past a knee at 4.2, with CIs of ±5% and
// ±8%, measured 4.6% apart, "19% per doubling", on a plateau flat by construction.
func (a *analyzer) plateauGrowth(i, j int) (g, least float64) {
	p, q := a.fit[i], a.fit[j]
	g = perDoubling(p.x, p.tps, q.x, q.tps)
	ci, cj := p.lv.OutputTPSCI95, q.lv.OutputTPSCI95
	if !ci.OK() || !cj.OK() {
		return g, g
	}
	d := q.tps - p.tps - math.Hypot(float64(ci), float64(cj))
	if d <= 0 {
		return g, math.Min(g, 0)
	}
	return g, perDoubling(p.x, p.tps, q.x, p.tps+d)
}

// perDoubling is the growth per doubling of concurrency from (x0, y0) to (x1, y1):
// (y1/y0)^(1/log2(x1/x0)) − 1; NaN when it is undefined.
func perDoubling(x0, y0, x1, y1 float64) float64 {
	if !(x1 > x0) || !(y0 > 0) || !(y1 > 0) {
		return math.NaN()
	}
	return math.Pow(y1/y0, 1/math.Log2(x1/x0)) - 1
}

// breakpointName names the breakpoint of a sharp-knee model as the rule's reason does.
func breakpointName(m Method) string {
	if m == MethodBatch {
		return "slot limit S"
	}
	return "breakpoint"
}

// fitR2s lists the R² of the fitted throughput models, the curve's first: "0.9999; USL
// 0.9965, hinge 0.9871".
func (a *analyzer) fitR2s() string {
	r2 := map[Method]Float{}
	if a.usl != nil {
		r2[MethodUSL] = a.usl.R2
	}
	if a.batch != nil {
		r2[MethodBatch] = a.batch.R2
	}
	if a.hinge != nil {
		r2[MethodHinge] = a.hinge.R2
	}
	out := fmtR2(r2[a.curveMethod])
	var others []string
	for _, m := range []Method{MethodUSL, MethodBatch, MethodHinge} {
		if v, ok := r2[m]; ok && m != a.curveMethod {
			others = append(others, m.Label()+" "+fmtR2(v))
		}
	}
	if len(others) > 0 {
		out += "; " + strings.Join(others, ", ")
	}
	return out
}

// fmtR2 formats R² with four decimals, or five when it rounds to 1.0000; "—" when null.
func fmtR2(v Float) string {
	if !v.OK() {
		return "—"
	}
	if s := fmt.Sprintf("%.4f", float64(v)); s != "1.0000" {
		return s
	}
	return fmt.Sprintf("%.5f", float64(v))
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
			a.warn(kneeDisagree(m, float64(v), k, knee.Method, knee.Rule, gain))
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
		if d := math.Abs(math.Log(p.x / c)); d < bd {
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
