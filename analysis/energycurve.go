package analysis

import "math"

// Energy on the curve (DESIGN §4.16): the energy-optimal load with its bootstrap interval, and
// J per output token at the knee (an open loop's capacity), the SLO point and max TPS.

// sloEnergyExcess is the share by which J per output token at the SLO point may exceed the
// optimum's before a warning says so.
const sloEnergyExcess = 0.20

// optimumWindow is the number of levels around the lowest J per output token that the
// optimum's curve (energyCurve) is fitted to: the fewest a bootstrap interval takes (minIntervalLevels).
const optimumWindow = minIntervalLevels

// energy sets Result.Energy when some level has GPU figures (nil otherwise): the levels' J per
// output token above idle (aboveIdle) and a warning for each level whose energy was not
// measured; the telemetry's source, the GPUs counted and the idle power; the energy-optimal
// load (energyOptimum); J per output token and the GPUs' power at the knee (an open loop's
// capacity), at the SLO point and at the level of max TPS, interpolated along the axis between
// the levels with energy around each (energyAt); and a warning when the SLO point's J per
// output token is more than sloEnergyExcess above the optimum's. One step on either axis.
func (a *analyzer) energy() {
	e := a.levelEnergy()
	if e == nil {
		return
	}
	pts := a.energyPoints()
	e.Optimal = a.energyOptimum(pts, sustained(pts))
	e.AtKnee = a.energyAt(pts, a.kneeX())
	e.AtSLOPoint = a.energyAt(pts, a.sloX())
	e.AtMaxTPS = a.energyAt(pts, a.maxTPSX())
	opt, slo := float64(e.Optimal.JPerOutputToken), float64(e.AtSLOPoint.JPerOutputToken)
	if finite(opt) && opt > 0 && finite(slo) && slo > opt*(1+sloEnergyExcess) {
		a.warn(energySLOAbove(a.res.Axis(), e.AtSLOPoint, e.Optimal))
	}
	a.res.Energy = e
}

// levelEnergy adds to every level with GPU figures its J per output token above idle, warns
// of each (not superseded) whose energy was not measured (neither its energy nor its J per
// output token: a level-summary CSV may give the second alone), and returns the run's Energy
// with its source, GPUs and idle power, or nil when no level has GPU figures.
func (a *analyzer) levelEnergy() *Energy {
	idleW := idlePower(a.res.Meta.GPUIdle)
	var e *Energy
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		if lv.GPU == nil {
			continue
		}
		aboveIdle(lv, idleW, a.ys.tps)
		if e == nil {
			e = &Energy{Source: lv.GPU.Source, IdleW: Float(idleW)}
		}
		e.GPUs = max(e.GPUs, lv.GPU.GPUs)
		if e.Source == "" {
			e.Source = lv.GPU.Source
		}
		if g := lv.GPU; !lv.Superseded && !g.EnergyJ.OK() && !g.JPerOutputToken.OK() {
			a.warn(gpuEnergyUnmeasured(lv))
		}
	}
	if e != nil && e.Source == "" && a.res.Meta.GPUIdle != nil {
		e.Source = a.res.Meta.GPUIdle.Source
	}
	return e
}

// energyPoints returns the valid levels (a.pts, sorted along the axis) with a positive J per
// output token.
func (a *analyzer) energyPoints() []point {
	var out []point
	for _, p := range a.pts {
		if g := p.lv.GPU; g != nil && g.JPerOutputToken.OK() && g.JPerOutputToken > 0 {
			out = append(out, p)
		}
	}
	return out
}

// sustained returns the points of pts a replica can serve: on an open loop the sustained
// levels (a rate past capacity, whose full batches spend the least per token, is no load to
// run at), every one on a closed loop.
func sustained(pts []point) []point {
	var out []point
	for _, p := range pts {
		if !p.lv.IsRate() || p.lv.Sustainable {
			out = append(out, p)
		}
	}
	return out
}

// noEnergyPoint returns the point x with no J per output token or power.
func noEnergyPoint(x float64) EnergyPoint {
	return EnergyPoint{X: Float(x), JPerOutputToken: NaN(), PowerW: NaN()}
}

// energyAt returns J per output token and the GPUs' mean power at x, interpolated along the
// axis between the levels of pts around it (interpAt), clamped to their range as the plan's
// figures are: beyond it, the nearest level's. Null figures where x is not finite or no level
// has energy.
func (a *analyzer) energyAt(pts []point, x float64) EnergyPoint {
	out := noEnergyPoint(x)
	if len(pts) == 0 || !finite(x) {
		return out
	}
	ax := a.res.Axis()
	out.JPerOutputToken = Float(interpAt(ax, pts, x, func(l *Level) float64 { return float64(l.GPU.JPerOutputToken) }))
	out.PowerW = Float(interpAt(ax, pts, x, func(l *Level) float64 { return float64(l.GPU.PowerW.Mean) }))
	return out
}

// kneeX returns the knee's place on the axis: a closed loop's headline knee, an open loop's
// capacity; NaN without one.
func (a *analyzer) kneeX() float64 {
	if rr := a.res.Rate; rr != nil {
		return float64(rr.CapacityRPS)
	}
	if k := a.res.Knee; k != nil {
		return float64(k.Concurrency)
	}
	return math.NaN()
}

// sloX returns the SLO point's place on the axis (NaN without one).
func (a *analyzer) sloX() float64 {
	if rr := a.res.Rate; rr != nil {
		return float64(rr.SLORPS)
	}
	return float64(a.res.SLO.MaxConcurrency)
}

// maxTPSX returns the place on the axis of the valid level of max TPS (the first, on a tie);
// NaN without one.
func (a *analyzer) maxTPSX() float64 {
	top := a.res.Throughput.MaxTPS
	for _, p := range a.pts {
		if top.OK() && p.tps == float64(top) {
			return p.x
		}
	}
	return math.NaN()
}

// planEnergy adds to c, the plan, its energy where the run has energy figures (Result.Energy):
// the GPUs' total power at the SLO point (one replica's), the fleet's (× ReplicasAtSLO ÷ 1000,
// kW), the kWh per 1M output tokens there (J per output token × 10⁶ ÷ 3.6·10⁶) and their cost
// at Plan.EnergyCostPerKWh (absent without a price). A figure that cannot be computed is null.
func (a *analyzer) planEnergy(c *Capacity) {
	e := a.res.Energy
	if e == nil {
		return
	}
	at := e.AtSLOPoint
	c.PowerPerReplicaW = at.PowerW
	c.FleetPowerKW = Float(float64(at.PowerW) * float64(c.ReplicasAtSLO) / 1000)
	c.KWhPerMOutputTokens = Float(float64(at.JPerOutputToken) * 1e6 / 3.6e6)
	if price := a.opts.Plan.EnergyCostPerKWh; price > 0 && finite(price) {
		c.EnergyCostPerMTokens = Float(float64(c.KWhPerMOutputTokens) * price)
	}
}
