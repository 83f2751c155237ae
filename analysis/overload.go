package analysis

import (
	"math"
)

// overload finds where throughput falls past its peak by more than overloadDrop over every
// level that was not client-bound (a.all), valid or not (DESIGN §4.5), and warns when the
// drop is within the levels' noise.
func (a *analyzer) overload() {
	if len(a.all) < 2 {
		return
	}
	peak := 0
	for i, p := range a.all {
		if p.tps > a.all[peak].tps {
			peak = i
		}
	}
	pk := a.all[peak].tps
	drop := 0.0
	low := a.all[peak]
	a.res.Overload.DropPct = 0
	for _, p := range a.all[peak+1:] {
		if pk > 0 && (pk-p.tps)/pk > drop {
			drop, low = (pk-p.tps)/pk, p
		}
		if !a.res.Overload.Detected && p.tps < (1-overloadDrop)*pk {
			a.res.Overload.Detected = true
			a.res.Overload.FromConcurrency = Float(p.x)
		}
	}
	a.res.Overload.DropPct = Float(drop * 100)
	if a.res.Overload.Detected {
		a.warn(overloadDetected(drop*100, pk, a.all[peak].x, float64(a.res.Overload.FromConcurrency)))
		if why := a.dropWithinNoise(a.all[peak], low); why != "" {
			a.warn(overloadNoise(drop*100, a.all[peak].x, low.x, why))
		}
	}
}

// dropWithinNoise says why the fall of throughput from the peak level pk to the level lo is
// within the measurements' noise, or returns "". With both levels' 95% CIs it is when the
// intervals overlap. Without them the noise is estimated from the levels up to the peak: s,
// the RMS residual of the headline curve over them (n − 3 degrees of freedom, every model
// has three parameters); the difference of two levels with independent noise of SD s has SD
// √2·s, so a drop within 2√2·s ≈ 2.8·s is inside the two-sided 95% range of noise alone.
// The peak is the highest of several noisy levels, so noise alone often puts it 10% above a
// later one: ±20% noise on a flat plateau "falls" 26% past its peak.
func (a *analyzer) dropWithinNoise(pk, lo point) string {
	d := pk.tps - lo.tps
	if cp, cl := pk.lv.OutputTPSCI95, lo.lv.OutputTPSCI95; cp.OK() && cl.OK() {
		if d <= float64(cp)+float64(cl) {
			return noiseOverlap(cp, cl)
		}
		return ""
	}
	if a.curve == nil {
		return ""
	}
	var sse float64
	n := 0
	for _, p := range a.fit {
		if p.x > pk.x {
			break
		}
		r := p.tps - a.curve(p.x)
		sse += r * r
		n++
	}
	if n <= 3 {
		return ""
	}
	s := math.Sqrt(sse / float64(n-3))
	if d <= 2*math.Sqrt2*s {
		return noiseScatter(s, a.curveMethod, d)
	}
	return ""
}
