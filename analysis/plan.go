package analysis

import "math"

// interpLog interpolates get over the valid levels linearly in log concurrency at c (clamped
// to the measured range).
func (a *analyzer) interpLog(c float64, get func(*Level) float64) float64 {
	return interpAt(Axis{}, a.pts, c, get)
}

// interpAt interpolates get over pts (sorted along the axis ax) at x, between the two points
// around it as ax.Frac places x between them (log concurrency, linear rate), clamped to the
// points' range; NaN without points or a positive finite x.
func interpAt(ax Axis, pts []point, x float64, get func(*Level) float64) float64 {
	if len(pts) == 0 || !finite(x) || x <= 0 {
		return math.NaN()
	}
	if x <= pts[0].x {
		return get(pts[0].lv)
	}
	for i := 1; i < len(pts); i++ {
		L, F := pts[i-1], pts[i]
		if x <= F.x {
			if F.x == L.x {
				return get(F.lv)
			}
			t := ax.Frac(L.x, F.x, x)
			return get(L.lv) + t*(get(F.lv)-get(L.lv))
		}
	}
	return get(pts[len(pts)-1].lv)
}

// plan is the capacity plan (DESIGN §4.8, §4.15): for the plan's targets — concurrent users
// U (a closed loop only), requests/s Q, output tokens/s P — the replicas that meet every target
// at each place the run answers (planPoints): max(⌈U ÷ x⌉, ⌈Q ÷ qps(x)⌉, ⌈P ÷ tps(x)⌉) for a
// replica run there, with the $ per 1M output tokens; GPUs and cost per hour from the replicas
// at the SLO point; with GPU telemetry, the power and energy of that plan (planEnergy). On an
// open loop a concurrent-users target has no meaning and is ignored with a warning, and the
// knee's and the efficient point's figures are null.
func (a *analyzer) plan() {
	p := a.opts.Plan
	users := max(p.ConcurrentUsers, 0)
	if a.res.Rate != nil && users > 0 {
		a.warn(rateUsersIgnored(users))
		users = 0
	}
	if users == 0 && !(p.QPS > 0) && !(p.OutputTPS > 0) {
		if p.ReplicaCostPerHour > 0 {
			a.warn(fixed(warnCapacityNoTarget))
		}
		return
	}
	c := newCapacity(p)
	c.ConcurrentUsers = users
	for _, at := range a.planPoints(c) {
		if !at.x.OK() {
			if at.unknown != nil {
				a.warn(*at.unknown)
			}
			continue
		}
		*at.replicas = replicasFor([2]float64{float64(users), at.users}, [2]float64{c.QPS, at.qps}, [2]float64{c.OutputTPS, float64(at.tps)})
		*at.cost = p.costPerM(float64(at.tps))
		if at.what != "" {
			a.pastBreach(at.what, float64(at.x))
		}
	}
	c.costs(p)
	a.planEnergy(c)
	a.res.Capacity = c
}

// planPoint is a place on the axis the plan sizes replicas at: x on the axis (null: not
// found, unknown's warning given when set), the concurrent users, requests/s and output
// tokens/s a replica serves there, and where its replicas and $ per 1M tokens go; what names
// it for the warning of a replica run past an SLO breach ("" for none).
type planPoint struct {
	x, tps         Float
	users, qps     float64
	replicas, cost *Float
	what           string
	unknown        *warning
}

// planPoints returns the places the plan of c sizes replicas at: on a closed loop the SLO
// point, the knee and the efficient point, a replica's requests/s there interpolated on log
// concurrency over the levels' QPS; on an open loop the SLO point and the capacity, a replica
// serving the rate there.
func (a *analyzer) planPoints(c *Capacity) []planPoint {
	noSLO := fixed(warnCapacityNoSLO)
	if rr := a.res.Rate; rr != nil {
		c.ReplicasAtCapacity, c.CostPerMTokensAtCapacity = NaN(), NaN()
		unknown := fixed(warnRateCapacityUnknown)
		return []planPoint{
			{x: rr.SLORPS, tps: rr.SLOTPS, qps: float64(rr.SLORPS), replicas: &c.ReplicasAtSLO, cost: &c.CostPerMTokens, unknown: &noSLO},
			{x: rr.CapacityRPS, tps: rr.CapacityTPS, qps: float64(rr.CapacityRPS), replicas: &c.ReplicasAtCapacity, cost: &c.CostPerMTokensAtCapacity, unknown: &unknown},
		}
	}
	closed := func(x, tps Float) planPoint {
		return planPoint{x: x, tps: tps, users: float64(x), qps: a.interpLog(float64(x), func(l *Level) float64 { return float64(l.QPS) })}
	}
	slo := closed(a.res.SLO.MaxConcurrency, a.res.SLO.TPS)
	slo.replicas, slo.cost, slo.unknown = &c.ReplicasAtSLO, &c.CostPerMTokens, &noSLO
	pts := []planPoint{slo}
	if k := a.res.Knee; k != nil {
		at := closed(k.Concurrency, k.TPS)
		at.replicas, at.cost, at.what = &c.ReplicasAtKnee, &c.CostPerMTokensAtKnee, "the knee"
		pts = append(pts, at)
	} else {
		noKnee := fixed(warnCapacityNoKnee)
		pts = append(pts, planPoint{x: NaN(), unknown: &noKnee})
	}
	if e := a.res.EfficientPoint; e != nil {
		at := closed(e.Concurrency, e.TPS)
		at.replicas, at.cost, at.what = &c.ReplicasAtEfficientPoint, &c.CostPerMTokensAtEfficientPoint, "the efficient point"
		pts = append(pts, at)
	}
	return pts
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
