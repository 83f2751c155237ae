package analysis

import "math"

// interpLog interpolates get over the valid levels linearly in log concurrency at c (clamped
// to the measured range).
func (a *analyzer) interpLog(c float64, get func(*Level) float64) float64 {
	if len(a.pts) == 0 || !finite(c) || c <= 0 {
		return math.NaN()
	}
	if c <= a.pts[0].x {
		return get(a.pts[0].lv)
	}
	for i := 1; i < len(a.pts); i++ {
		L, F := a.pts[i-1], a.pts[i]
		if c <= F.x {
			if F.x == L.x {
				return get(F.lv)
			}
			t := (math.Log(c) - math.Log(L.x)) / (math.Log(F.x) - math.Log(L.x))
			return get(L.lv) + t*(get(F.lv)-get(L.lv))
		}
	}
	return get(a.pts[len(a.pts)-1].lv)
}

// capacity is the capacity plan of a closed-loop run (DESIGN §4.8): replicas at the SLO
// point, the knee and the efficient point for the plan's targets, GPUs, cost per hour and $
// per 1M output tokens.
func (a *analyzer) capacity() {
	p := a.opts.Plan
	if p.ConcurrentUsers <= 0 && !(p.QPS > 0) && !(p.OutputTPS > 0) {
		if p.ReplicaCostPerHour > 0 {
			a.warn(fixed(warnCapacityNoTarget))
		}
		return
	}
	capc := newCapacity(p)
	capc.ConcurrentUsers = max(p.ConcurrentUsers, 0)
	qpsOf := func(l *Level) float64 { return float64(l.QPS) }
	// at returns the replicas and the $ per 1M output tokens of a replica run at concurrency
	// c, serving tps output tokens/s.
	at := func(c Float, tps Float) (Float, Float) {
		x := float64(c)
		return replicasFor([2]float64{float64(capc.ConcurrentUsers), x}, [2]float64{capc.QPS, a.interpLog(x, qpsOf)},
			[2]float64{capc.OutputTPS, float64(tps)}), p.costPerM(float64(tps))
	}
	if c := a.res.SLO.MaxConcurrency; finite(float64(c)) {
		capc.ReplicasAtSLO, capc.CostPerMTokens = at(c, a.res.SLO.TPS)
	} else {
		a.warn(fixed(warnCapacityNoSLO))
	}
	if k := a.res.Knee; k != nil {
		capc.ReplicasAtKnee, capc.CostPerMTokensAtKnee = at(k.Concurrency, k.TPS)
		a.pastBreach("the knee", float64(k.Concurrency))
	} else {
		a.warn(fixed(warnCapacityNoKnee))
	}
	if e := a.res.EfficientPoint; e != nil {
		capc.ReplicasAtEfficientPoint, capc.CostPerMTokensAtEfficientPoint = at(e.Concurrency, e.TPS)
		a.pastBreach("the efficient point", float64(e.Concurrency))
	}
	capc.costs(p)
	a.res.Capacity = capc
}

// newCapacity returns the plan of p's requests/s and output tokens/s targets with every figure
// null but those of an arrival-rate run's capacity (absent).
func newCapacity(p Plan) *Capacity {
	n := NaN()
	return &Capacity{QPS: math.Max(p.QPS, 0), OutputTPS: math.Max(p.OutputTPS, 0),
		ReplicasAtSLO: n, ReplicasAtKnee: n, ReplicasAtEfficientPoint: n, GPUs: n, CostPerHour: n,
		CostPerMTokens: n, CostPerMTokensAtKnee: n, CostPerMTokensAtEfficientPoint: n}
}

// replicasFor returns the replicas that meet every target: max ⌈want ÷ per⌉ over the
// {want, per} pairs whose want is set (> 0), per what one replica serves; null when a set
// target's per is unknown or not positive, 0 when no target is set.
func replicasFor(targets ...[2]float64) Float {
	need := 0.0
	for _, t := range targets {
		if !(t[0] > 0) {
			continue
		}
		if !finite(t[1]) || t[1] <= 0 {
			return NaN()
		}
		need = math.Max(need, math.Ceil(t[0]/t[1]-1e-9))
	}
	return Float(need)
}

// costPerM returns the $ per 1M output tokens of a replica at tps output tokens/s: its cost
// per hour ÷ (tps × 3600) × 10⁶; null without a cost or a positive tps.
func (p Plan) costPerM(tps float64) Float {
	if p.ReplicaCostPerHour > 0 && finite(tps) && tps > 0 {
		return Float(p.ReplicaCostPerHour / (tps * 3600) * 1e6)
	}
	return NaN()
}

// costs sets c's GPUs and cost per hour from its replicas at the SLO point and p's GPUs per
// replica (1 when unset) and cost per replica-hour.
func (c *Capacity) costs(p Plan) {
	if !c.ReplicasAtSLO.OK() {
		return
	}
	c.GPUs = Float(float64(c.ReplicasAtSLO) * float64(max(p.GPUsPerReplica, 1)))
	if p.ReplicaCostPerHour > 0 {
		c.CostPerHour = Float(float64(c.ReplicasAtSLO) * p.ReplicaCostPerHour)
	}
}

// pastBreach warns when the replicas at what (the knee, the efficient point), sized at
// concurrency c per replica, run each replica past the smallest concurrency that measured an
// SLO breach (DESIGN §4.8): those replicas serve the load at full throughput but miss the SLO.
func (a *analyzer) pastBreach(what string, c float64) {
	if a.breachAt > 0 && finite(c) && c > a.breachAt {
		a.warn(capacityPastBreach(what, c, a.breachAt))
	}
}

// plan is the capacity plan of an arrival-rate run (DESIGN §4.15): with a target of
// requests/s Q and/or output tokens/s P, replicas at the SLO point = max(⌈Q ÷ slo_rps⌉,
// ⌈P ÷ slo_tps⌉) and at capacity = max(⌈Q ÷ capacity_rps⌉, ⌈P ÷ capacity_tps⌉); GPUs, cost
// per hour and $ per 1M output tokens as in the closed loop (§4.8). A concurrent-users
// target has no meaning on an open loop and is ignored with a warning; the knee's and the
// efficient point's figures are null.
func (r *rater) plan() {
	p := r.opts.Plan
	if p.ConcurrentUsers > 0 {
		r.warn(rateUsersIgnored(p.ConcurrentUsers))
	}
	if !(p.QPS > 0) && !(p.OutputTPS > 0) {
		if p.ReplicaCostPerHour > 0 {
			r.warn(fixed(warnCapacityNoTarget))
		}
		return
	}
	c := newCapacity(p)
	c.ReplicasAtCapacity, c.CostPerMTokensAtCapacity = NaN(), NaN()
	replicas := func(rps, tps float64) Float { return replicasFor([2]float64{c.QPS, rps}, [2]float64{c.OutputTPS, tps}) }
	if r.rr.SLORPS.OK() {
		c.ReplicasAtSLO = replicas(float64(r.rr.SLORPS), float64(r.rr.SLOTPS))
		c.CostPerMTokens = p.costPerM(float64(r.rr.SLOTPS))
	} else {
		r.warn(fixed(warnCapacityNoSLO))
	}
	if r.rr.CapacityRPS.OK() {
		c.ReplicasAtCapacity = replicas(float64(r.rr.CapacityRPS), float64(r.rr.CapacityTPS))
		c.CostPerMTokensAtCapacity = p.costPerM(float64(r.rr.CapacityTPS))
	} else {
		r.warn(fixed(warnRateCapacityUnknown))
	}
	c.costs(p)
	r.res.Capacity = c
}
