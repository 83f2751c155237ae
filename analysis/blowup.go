package analysis

import "math"

func (a *analyzer) blowup() {
	var lvs []*Level
	var cs []float64
	for _, p := range a.pts {
		lvs, cs = append(lvs, p.lv), append(cs, p.c)
	}
	stat, x, y := ttftSeries(lvs, cs, func(l *Level) Latency { return l.TTFT })
	switch len(x) {
	case 0:
		a.warn(blowupNoTTFT())
		return
	case 1:
		a.warn(blowupOneLevel(x[0]))
		return
	}
	if stat == "p50" {
		stat = "" // the statistic of every closed-loop analysis.json before the key
	}
	if r, ok := fitBlowupRamp(x, y); ok {
		a.res.TTFTBlowup = &Blowup{Concurrency: Float(r.Breakpoint), Method: MethodHinge, BaselineMS: Float(r.Base), SlopeMSPerUser: Float(r.Slope), Stat: stat}
		a.blowupGap(x, y, r)
		return
	}
	if i := blowupByFactor(y); i >= 0 {
		a.res.TTFTBlowup = &Blowup{Concurrency: Float(x[i]), Method: Method3xBaseline, BaselineMS: Float(y[0]), SlopeMSPerUser: NaN(), Stat: stat}
		return
	}
	a.warn(blowupNone(stat, y[0], x[len(x)-1]))
}

// ttftStats are the TTFT statistics the blow-up may be found on, in the order it prefers
// them: the median, else the mean, else p90 or p95 (a published table may carry only some).
var ttftStats = []string{"p50", "mean", "p90", "p95"}

// ttftStat returns the statistic of t named stat (one of ttftStats).
func ttftStat(t Latency, stat string) float64 {
	switch stat {
	case "p50":
		return float64(t.P50)
	case "mean":
		return float64(t.Mean)
	case "p90":
		return float64(t.P90)
	}
	return float64(t.P95)
}

// ttftSeries returns the first statistic of ttftStats that at least two of levels report
// (positive and finite; the first that one does when none has two), and the (x, TTFT) points
// of the levels reporting it, x[i] the axis value of levels[i] (ascending). of picks the
// TTFT of a level.
func ttftSeries(levels []*Level, xs []float64, of func(*Level) Latency) (stat string, x, y []float64) {
	best := -1
	for s, name := range ttftStats {
		var px, py []float64
		for i, l := range levels {
			if v := ttftStat(of(l), name); finite(v) && v > 0 {
				px, py = append(px, xs[i]), append(py, v)
			}
		}
		if len(px) >= 2 {
			return name, px, py
		}
		if len(px) == 1 && best < 0 {
			best, x, y = s, px, py
		}
	}
	if best < 0 {
		return "", nil, nil
	}
	return ttftStats[best], x, y
}

// fitBlowupRamp fits the flat-then-linear ramp of the TTFT blow-up to (x, y), ascending x
// (DESIGN §4.4): weighted by TTFT^−1.5 first (FitRampWeighted: TTFT spans orders of magnitude
// over a sweep and its noise grows with it, so an unweighted fit lets the largest levels
// place the breakpoint), unweighted when the weighted fit is no ramp. A fit is accepted when
// its slope and base are positive, its breakpoint lies below the largest x, R² ≥ 0.8 and it
// grows at least half its base past the breakpoint; ok is false with fewer than MinFitLevels
// points or no accepted fit.
func fitBlowupRamp(x, y []float64) (Ramp, bool) {
	if len(x) < MinFitLevels {
		return Ramp{}, false
	}
	for _, fit := range []func(x, y []float64) (Ramp, error){FitRampWeighted, FitRamp} {
		if r, err := fit(x, y); err == nil && r.Slope > 0 && r.Base > 0 && r.Breakpoint < x[len(x)-1] &&
			r.R2 >= 0.8 && r.Slope*(x[len(x)-1]-r.Breakpoint) >= 0.5*r.Base {
			return r, true
		}
	}
	return Ramp{}, false
}

// blowupByFactor returns the index of the first y above BlowupFactor × y[0] (the fallback
// blow-up), or −1.
func blowupByFactor(y []float64) int {
	for i := range y {
		if y[i] > BlowupFactor*y[0] {
			return i
		}
	}
	return -1
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
