package analysis

import "math"

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

// efficientPoint returns the marginal-gain point of the curve: the smallest N in [smallest,
// largest ÷ 2] of the fitted levels where one more doubling adds less than KneeGain, without
// its interval; nil, with a warning, when there is none. plateau is the headline plateau
// onset (NaN under the marginal-gain rule, when this point is the knee): the warnings name
// the point accordingly.
func (a *analyzer) efficientPoint(x []float64, plateau Float) *EfficientPoint {
	answer := AnswerKnee
	if plateau.OK() {
		answer = AnswerEfficientPoint
	}
	gain := a.opts.KneeGain
	lo, hi := x[0], x[len(x)-1]/2
	if hi < lo {
		a.warn(kneeSpan(answer, x[0], x[len(x)-1]))
		return nil
	}
	k, status := doublingKnee(a.curve, lo, hi, gain)
	switch status {
	case "none":
		a.warn(kneeBeyond(answer, (a.curve(x[len(x)-1])/a.curve(hi)-1)*100, x[len(x)-1], gain))
		return nil
	case "below":
		a.warn(kneeAtBottom(answer, lo, gain))
	}
	return &EfficientPoint{Concurrency: Float(k), TPS: Float(a.curve(k)), Interval: [2]Float{NaN(), NaN()},
		Method: a.curveMethod, Gain: Float(gain)}
}

// intervals returns the bootstrap 95% intervals of the curve's breakpoint (the plateau onset;
// NaN unless plateau holds one) and of its marginal-gain point (when eff), and sets the USL
// peak's interval.
func (a *analyzer) intervals(x, y []float64, plateau Float, eff bool) (breaks, effIv [2]Float) {
	gain := a.opts.KneeGain
	lo, hi := x[0], x[len(x)-1]/2
	effName := "knee"
	if plateau.OK() {
		effName = "efficient point"
	}
	if !eff {
		effName = ""
	}
	bpName := ""
	if plateau.OK() {
		bpName = "knee (" + breakpointName(a.curveMethod) + ")"
	}
	nan := [2]Float{NaN(), NaN()}
	switch a.curveMethod {
	case MethodUSL:
		return nan, a.bootstrapUSL(x, y, gain, lo, hi, effName)
	case MethodBatch:
		a.bootstrapUSL(x, y, gain, lo, hi, "")
		return a.bootstrapCurve(x, y, gain, lo, hi, a.batch.At, bpName, effName, func(ys []float64) (func(float64) float64, float64, error) {
			b, err := fitBatch(x, ys)
			return b.At, float64(b.Limit), err
		})
	case MethodHinge:
		a.bootstrapUSL(x, y, gain, lo, hi, "")
		return a.bootstrapCurve(x, y, gain, lo, hi, a.hinge.At, bpName, effName, func(ys []float64) (func(float64) float64, float64, error) {
			h, err := fitHinge(x, ys)
			return h.At, float64(h.Breakpoint), err
		})
	}
	return nan, nan
}
