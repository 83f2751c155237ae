package analysis

import "math"

func (a *analyzer) blowup() {
	var x, y []float64
	for _, p := range a.pts {
		if v := float64(p.lv.TTFT.P50); finite(v) && v > 0 {
			x = append(x, p.c)
			y = append(y, v)
		}
	}
	switch len(x) {
	case 0:
		a.warn(blowupNoTTFT())
		return
	case 1:
		a.warn(blowupOneLevel(x[0]))
		return
	}
	if len(x) >= MinFitLevels {
		// The ramp is fitted by least squares weighted by TTFT^−1.5 first (FitRampWeighted):
		// TTFT spans orders of magnitude over a sweep and its noise grows with it, so an
		// unweighted fit lets the largest levels place the breakpoint. The unweighted fit is
		// the fallback when the weighted one is no ramp.
		for _, fit := range []func(x, y []float64) (Ramp, error){FitRampWeighted, FitRamp} {
			if r, err := fit(x, y); err == nil && r.Slope > 0 && r.Base > 0 && r.Breakpoint < x[len(x)-1] &&
				r.R2 >= 0.8 && r.Slope*(x[len(x)-1]-r.Breakpoint) >= 0.5*r.Base {
				a.res.TTFTBlowup = &Blowup{Concurrency: Float(r.Breakpoint), Method: MethodHinge, BaselineMS: Float(r.Base), SlopeMSPerUser: Float(r.Slope)}
				a.blowupGap(x, y, r)
				return
			}
		}
	}
	base := y[0]
	for i := range x {
		if y[i] > BlowupFactor*base {
			a.res.TTFTBlowup = &Blowup{Concurrency: Float(x[i]), Method: Method3xBaseline, BaselineMS: Float(base), SlopeMSPerUser: NaN()}
			return
		}
	}
	a.warn(blowupNone(base, x[len(x)-1]))
}

// blowupGap warns when the measured TTFT only brackets the blow-up r found: the last level
// within 2× the fitted baseline and the first above it are more than a doubling apart, so
// the breakpoint between them is the fit's, not a measurement's.
func (a *analyzer) blowupGap(x, y []float64, r Ramp) {
	lastFlat, firstHigh := math.NaN(), math.NaN()
	for i := range x {
		if y[i] > 2*r.Base {
			firstHigh = x[i]
			break
		}
		lastFlat = x[i]
	}
	if finite(lastFlat) && finite(firstHigh) && firstHigh > maxLevelGap*lastFlat {
		a.warn(blowupGap(r, lastFlat, firstHigh))
	}
}
