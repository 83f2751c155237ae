package analysis

import "math"

// interpLog interpolates get over the valid levels linearly in log concurrency at c (clamped
// to the measured range).
func (a *analyzer) interpLog(c float64, get func(*Level) float64) float64 {
	if len(a.pts) == 0 || !finite(c) || c <= 0 {
		return math.NaN()
	}
	if c <= a.pts[0].c {
		return get(a.pts[0].lv)
	}
	for i := 1; i < len(a.pts); i++ {
		L, F := a.pts[i-1], a.pts[i]
		if c <= F.c {
			if F.c == L.c {
				return get(F.lv)
			}
			t := (math.Log(c) - math.Log(L.c)) / (math.Log(F.c) - math.Log(L.c))
			return get(L.lv) + t*(get(F.lv)-get(L.lv))
		}
	}
	return get(a.pts[len(a.pts)-1].lv)
}

func (a *analyzer) capacity() {
	p := a.opts.Plan
	if p.ConcurrentUsers <= 0 && !(p.QPS > 0) && !(p.OutputTPS > 0) {
		if p.ReplicaCostPerHour > 0 {
			a.warn(capacityNoTarget())
		}
		return
	}
	gpus := p.GPUsPerReplica
	if gpus <= 0 {
		gpus = 1
	}
	capc := &Capacity{ConcurrentUsers: max(p.ConcurrentUsers, 0), QPS: math.Max(p.QPS, 0), OutputTPS: math.Max(p.OutputTPS, 0),
		ReplicasAtSLO: NaN(), ReplicasAtKnee: NaN(), ReplicasAtEfficientPoint: NaN(), GPUs: NaN(), CostPerHour: NaN(),
		CostPerMTokens: NaN(), CostPerMTokensAtKnee: NaN(), CostPerMTokensAtEfficientPoint: NaN()}
	qpsOf := func(l *Level) float64 { return float64(l.QPS) }
	replicas := func(c, qps, tps float64) Float {
		need := 0.0
		for _, t := range [][2]float64{{float64(capc.ConcurrentUsers), c}, {capc.QPS, qps}, {capc.OutputTPS, tps}} {
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
	perM := func(tps float64) Float {
		if p.ReplicaCostPerHour > 0 && finite(tps) && tps > 0 {
			return Float(p.ReplicaCostPerHour / (tps * 3600) * 1e6)
		}
		return NaN()
	}
	if c := float64(a.res.SLO.MaxConcurrency); finite(c) {
		tps := float64(a.res.SLO.TPS)
		capc.ReplicasAtSLO = replicas(c, a.interpLog(c, qpsOf), tps)
		capc.CostPerMTokens = perM(tps)
	} else {
		a.warn(capacityNoSLO())
	}
	if k := a.res.Knee; k != nil {
		c := float64(k.Concurrency)
		capc.ReplicasAtKnee = replicas(c, a.interpLog(c, qpsOf), float64(k.TPS))
		capc.CostPerMTokensAtKnee = perM(float64(k.TPS))
		a.pastBreach("the knee", c)
	} else {
		a.warn(capacityNoKnee())
	}
	if e := a.res.EfficientPoint; e != nil {
		c := float64(e.Concurrency)
		capc.ReplicasAtEfficientPoint = replicas(c, a.interpLog(c, qpsOf), float64(e.TPS))
		capc.CostPerMTokensAtEfficientPoint = perM(float64(e.TPS))
		a.pastBreach("the efficient point", c)
	}
	if capc.ReplicasAtSLO.OK() {
		capc.GPUs = Float(float64(capc.ReplicasAtSLO) * float64(gpus))
		if p.ReplicaCostPerHour > 0 {
			capc.CostPerHour = Float(float64(capc.ReplicasAtSLO) * p.ReplicaCostPerHour)
		}
	}
	a.res.Capacity = capc
}

// pastBreach warns when the replicas at what (the knee, the efficient point), sized at
// concurrency c per replica, run each replica past the smallest concurrency that measured an
// SLO breach (DESIGN §4.8): those replicas serve the load at full throughput but miss the SLO.
func (a *analyzer) pastBreach(what string, c float64) {
	if a.breachAt > 0 && finite(c) && c > a.breachAt {
		a.warn(capacityPastBreach(what, c, a.breachAt))
	}
}
