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
		a.warn("no TTFT blow-up: no valid level has a TTFT p50")
		return
	case 1:
		a.warn("no TTFT blow-up: only one valid level (concurrency %g) has a TTFT p50: nothing to compare it with", x[0])
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
				a.res.TTFTBlowup = &Blowup{Concurrency: Float(r.Breakpoint), Method: "hinge", BaselineMS: Float(r.Base), SlopeMSPerUser: Float(r.Slope)}
				a.blowupGap(x, y, r)
				return
			}
		}
	}
	base := y[0]
	for i := range x {
		if y[i] > BlowupFactor*base {
			a.res.TTFTBlowup = &Blowup{Concurrency: Float(x[i]), Method: "3x_baseline", BaselineMS: Float(base), SlopeMSPerUser: NaN()}
			return
		}
	}
	a.warn("no TTFT blow-up: TTFT p50 stays within %gx of the first level's %.0f ms up to concurrency %g", BlowupFactor, base, x[len(x)-1])
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
		a.warn("TTFT blow-up: TTFT p50 stays within 2× its baseline (%.3g ms) up to concurrency %g and exceeds it at %g: the blow-up lies between them, where no level was measured (the fit puts it at %.3g); measure levels in between to pin it down",
			r.Base, lastFlat, firstHigh, r.Breakpoint)
	}
}
