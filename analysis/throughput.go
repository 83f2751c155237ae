package analysis

import (
	"math"
	"slices"
)

// geometric reports whether the levels grow by a roughly constant factor ≥ 1.5. Called with the
// planned levels; when it holds, Kneedle runs on log2(concurrency) of every level, added ones
// included.
func geometric(x []float64) bool {
	var ratios []float64
	for i := 1; i < len(x); i++ {
		if x[i] > x[i-1] {
			ratios = append(ratios, x[i]/x[i-1])
		}
	}
	if len(ratios) < 2 {
		return false
	}
	lo, hi := slices.Min(ratios), slices.Max(ratios)
	return lo >= 1.5 && hi/lo <= 1.5
}

func (a *analyzer) throughput() {
	if len(a.fit) < minFitLevels {
		return
	}
	x, y := a.xy()
	// Each fit takes milliseconds (a sweep has at most 100 levels); an interrupt ends the
	// sequence between them.
	if u, err := FitUSL(x, y); err != nil {
		a.warn(fitFailed(MethodUSL, err))
	} else {
		a.usl = &u
		if !u.PeakConcurrency.OK() {
			a.warn(uslNoPeak(u.Kappa))
		}
	}
	if a.stopped() {
		return
	}
	if b, err := fitBatch(x, y); err != nil {
		a.warn(fitFailed(MethodBatch, err))
	} else {
		a.batch = &b
	}
	if a.stopped() {
		return
	}
	if h, err := fitHinge(x, y); err != nil {
		a.warn(fitFailed(MethodHinge, err))
	} else {
		a.hinge = &h
	}
	if a.stopped() {
		return
	}
	kx := x
	// The plan's spacing decides the axis: levels added between doublings (sweep.refine)
	// break the constant factor but not the doubling plan's log-scale reading.
	var planned []float64
	for _, p := range a.fit {
		if p.lv == nil || p.lv.Refine == "" {
			planned = append(planned, p.x)
		}
	}
	geo := geometric(planned)
	shape := "concave increasing on concurrency"
	if geo {
		kx = make([]float64, len(x))
		for i := range x {
			kx[i] = math.Log2(x[i])
		}
		shape = "concave increasing on log2(concurrency)"
	}
	k, ok, err := LocateKnee(kx, y, KneedleOptions{})
	if err == nil && ok && k.Knee == kx[0] {
		// The difference curve starts with its maximum at the left edge (the curve is convex
		// there, as throughput on a log axis is at first): the offline knee is that edge
		// artefact, so take the online (last) knee instead.
		k, ok, err = LocateKnee(kx, y, KneedleOptions{Online: true})
		shape += ", online"
	}
	switch {
	case err != nil || !ok:
		a.warn(kneedleNone())
	case k.Knee == kx[0]:
		// Still the left edge, online: no later maximum of the difference curve is followed by
		// a drop of S mean steps, as on a straight or convex curve (throughput growing as fast
		// or faster at every level) or one that bends only at its last levels. The first level
		// is an edge artefact, not a knee.
		a.warn(kneedleEdge(x[0]))
	default:
		knee := k.Knee
		if geo {
			knee = math.Exp2(knee)
		}
		a.res.Throughput.Kneedle = &Kneedle{Knee: Float(knee), KneeTPS: Float(k.KneeY), Shape: shape}
	}
	a.res.Throughput.USL = a.usl
	a.res.Throughput.Hinge = a.hinge
	a.res.Throughput.Batch = a.batch
}
