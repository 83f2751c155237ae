package analysis

import (
	"cmp"
	"math"
	"slices"
)

// blowup finds the TTFT blow-up (DESIGN §4.4) on either axis: on (x, TTFT) of the valid
// levels (on an open loop sustainable or not, TTFT from the scheduled arrival where a level
// has it, Level.UserTTFT) and the excluded closed-loop levels whose latency was still rising
// (risingLevels): evidence of queueing, their TTFT a lower bound of where it was heading. Its
// statistic is the first of p50, mean, p90, p95 that two levels report (ttftSeries). An
// embeddings run's blow-up is of its E2E latency (yardstick), read the same way.
func (a *analyzer) blowup() {
	words := blowupWordsOf(a.res.Axis())
	pts := append(slices.Clone(a.pts), a.risingLevels()...)
	slices.SortStableFunc(pts, func(p, q point) int { return cmp.Compare(p.x, q.x) })
	lvs, xs := make([]*Level, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		lvs[i], xs[i] = p.lv, p.x
	}
	stat, x, y := ttftSeries(lvs, xs, a.ys.latency)
	switch len(x) {
	case 0:
		if len(pts) > 0 || a.res.Rate == nil {
			a.warn(words.noTTFT)
		}
		return
	case 1:
		a.warn(words.oneLevel(x[0], stat))
		return
	}
	if rr := a.res.Rate; rr != nil {
		rr.TTFTBlowupStat = stat // named even when no blow-up is found
	}
	var b Blowup
	if r, ok := fitBlowupRamp(x, y); ok {
		b = Blowup{Concurrency: Float(r.Breakpoint), Method: MethodHinge, BaselineMS: Float(r.Base), SlopeMSPerUser: Float(r.Slope), Stat: stat}
	} else if i := blowupByFactor(y); i >= 0 {
		b = Blowup{Concurrency: Float(x[i]), Method: method3xBaseline, BaselineMS: Float(y[0]), SlopeMSPerUser: NaN(), Stat: stat}
	} else {
		if blowupThin(y) {
			a.warn(words.unsupported(stat, y[0], y[len(y)-1], x[len(x)-1]))
		} else {
			a.warn(words.none(stat, y[0], x[len(x)-1]))
		}
		return
	}
	if rr := a.res.Rate; rr != nil {
		rr.TTFTBlowupRPS, rr.TTFTBlowupMethod = b.Concurrency, b.Method
		rr.TTFTBlowupBaselineMS, rr.TTFTBlowupSlope = b.BaselineMS, b.SlopeMSPerUser
		return
	}
	if b.Stat == "p50" {
		b.Stat = "" // the statistic of every closed-loop analysis.json before the key
	}
	a.res.TTFTBlowup = &b
	if b.Method == MethodHinge && float64(b.Concurrency) <= x[0] && x[0] > 1 {
		a.warn(blowupAtBottom(b.Stat, x[0]))
	}
	fitAt := math.NaN()
	if b.Method == MethodHinge {
		fitAt = float64(b.Concurrency)
	}
	a.blowupGap(x, y, float64(b.BaselineMS), fitAt)
}

// blowupWords are the warnings of the TTFT blow-up on one axis.
type blowupWords struct {
	noTTFT      warning
	oneLevel    func(x float64, stat string) warning
	none        func(stat string, baseMS, top float64) warning
	unsupported func(stat string, firstMS, lastMS, top float64) warning
}

// blowupWordsOf returns the blow-up's warnings on ax.
func blowupWordsOf(ax Axis) blowupWords {
	if ax.IsRate() {
		return blowupWords{fixed(warnRateBlowupNoTTFT), rateBlowupOneLevel, rateBlowupNone, rateBlowupUnsupported}
	}
	return blowupWords{fixed(warnBlowupNoTTFT), blowupOneLevel, blowupNone, blowupUnsupported}
}

// A TTFT blow-up is claimed only on a rise the levels support (DESIGN §4.4): the TTFT at the
// largest level at least blowupMinRise × the flat part's (the fitted baseline, or the first
// level's for the fallback) and, for a fitted ramp, at least blowupMinPast levels past the
// breakpoint with a TTFT above twice the baseline (a slope needs two points on it). Prefill
// contention alone raises TTFT a few times over a sweep; queueing raises it by orders of
// magnitude.
const (
	blowupMinPast = 2
	blowupMinRise = 5.0
)

// rampSupported reports whether a fitted ramp from x = at over the flat part base is
// supported by (x, y), ascending x: past counts the levels beyond it (x > at) whose y is
// above 2 × base, on the ramp rather than on the flat part.
func rampSupported(x, y []float64, at, base float64) bool {
	past := 0
	for i, v := range x {
		if v > at && y[i] > 2*base {
			past++
		}
	}
	return past >= blowupMinPast && base > 0 && y[len(y)-1] >= blowupMinRise*base
}

// blowupThin reports whether TTFT rose past blowupFactor × its first level's without a
// supported ramp: the "no blow-up" warning must then not say it stayed within that factor.
func blowupThin(y []float64) bool {
	for _, v := range y {
		if v > blowupFactor*y[0] {
			return true
		}
	}
	return false
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
// (DESIGN §4.4): weighted by TTFT^−1.5 first (fitRampWeighted: TTFT spans orders of magnitude
// over a sweep and its noise grows with it, so an unweighted fit lets the largest levels
// place the breakpoint), unweighted when the weighted fit is no ramp. A fit is accepted when
// its slope and base are positive, its breakpoint lies below the largest x, R² ≥ 0.8 and it
// grows at least half its base past the breakpoint, and the ramp is supported
// (rampSupported); ok is false with fewer than minFitLevels points or no accepted fit.
func fitBlowupRamp(x, y []float64) (Ramp, bool) {
	if len(x) < minFitLevels {
		return Ramp{}, false
	}
	for _, fit := range []func(x, y []float64) (Ramp, error){fitRampWeighted, fitRamp} {
		if r, err := fit(x, y); err == nil && r.Slope > 0 && r.Base > 0 && r.Breakpoint < x[len(x)-1] &&
			r.R2 >= 0.8 && r.Slope*(x[len(x)-1]-r.Breakpoint) >= 0.5*r.Base && rampSupported(x, y, r.Breakpoint, r.Base) {
			return r, true
		}
	}
	return Ramp{}, false
}

// blowupByFactor returns the index of the first y above blowupFactor × y[0] (the fallback
// blow-up, a measurement rather than a fit) when the last y is at least blowupMinRise ×
// y[0], or −1.
func blowupByFactor(y []float64) int {
	if !(y[len(y)-1] >= blowupMinRise*y[0]) {
		return -1
	}
	for i := range y {
		if y[i] > blowupFactor*y[0] {
			return i
		}
	}
	return -1
}

// blowupGap warns when the measured TTFT only brackets the blow-up: the last level within
// 2× the baseline base and the first above it are more than a doubling apart, so the
// blow-up between them is the fit's (fitAt, NaN for the fallback), not a measurement's.
func (a *analyzer) blowupGap(x, y []float64, base, fitAt float64) {
	lastFlat, firstHigh := math.NaN(), math.NaN()
	for i := range x {
		if y[i] > 2*base {
			firstHigh = x[i]
			break
		}
		lastFlat = x[i]
	}
	if finite(lastFlat) && finite(firstHigh) && firstHigh > maxLevelGap*lastFlat {
		a.warn(blowupGap(base, lastFlat, firstHigh, fitAt))
	}
}
