package analysis

import (
	"math"
	"slices"
)

// blowup finds the TTFT blow-up on the rate axis (DESIGN §4.15): the closed loop's rule
// (§4.4) on (offered rate, TTFT) of the valid levels, sustainable or not, TTFT from the
// scheduled arrival where a level has it, its statistic the first of p50, mean, p90, p95 that
// two levels report.
func (r *rater) blowup() {
	var lvs []*Level
	var xs []float64
	for _, p := range r.pts {
		lvs, xs = append(lvs, p.lv), append(xs, p.x)
	}
	stat, x, y := ttftSeries(lvs, xs, (*Level).UserTTFT)
	switch len(x) {
	case 0:
		if len(r.pts) > 0 {
			r.warn(rateBlowupNoTTFT())
		}
		return
	case 1:
		r.warn(rateBlowupOneLevel(x[0], stat))
		return
	}
	r.rr.TTFTBlowupStat = stat
	if ramp, ok := fitBlowupRamp(x, y); ok {
		r.rr.TTFTBlowupRPS, r.rr.TTFTBlowupMethod = Float(ramp.Breakpoint), MethodHinge
		r.rr.TTFTBlowupBaselineMS, r.rr.TTFTBlowupSlope = Float(ramp.Base), Float(ramp.Slope)
		return
	}
	if i := blowupByFactor(y); i >= 0 {
		r.rr.TTFTBlowupRPS, r.rr.TTFTBlowupMethod, r.rr.TTFTBlowupBaselineMS = Float(x[i]), Method3xBaseline, Float(y[0])
		return
	}
	if blowupThin(y) {
		r.warn(rateBlowupUnsupported(stat, y[0], y[len(y)-1], x[len(x)-1]))
		return
	}
	r.warn(rateBlowupNone(stat, y[0], x[len(x)-1]))
}

// rateSLOMetrics sets the result's thresholds from the options and returns the SLOs some
// valid level reports, read from the user's side: TTFT and E2E from the scheduled arrival
// where a level has them (UserTTFT, UserE2E), TPOT as measured.
func (r *rater) rateSLOMetrics() []sloMetric {
	// sloMetrics reads the closed loop's points; hand it this run's, then the user's view.
	r.pts2points()
	return r.sloMetrics(userLatencyOf)
}

// sentLatency returns l's latency distribution of metric (ttft, tpot, itl, e2e) from the send
// time.
func sentLatency(l *Level, metric string) Latency { return *l.LatencyOf(metric) }

// userLatencyOf returns l's latency distribution of metric as its user sees it: TTFT and E2E
// from the scheduled send (Level.UserTTFT, UserE2E).
func userLatencyOf(l *Level, metric string) Latency {
	switch metric {
	case "ttft":
		return l.UserTTFT()
	case "e2e":
		return l.UserE2E()
	}
	return sentLatency(l, metric)
}

// pts2points fills the analyzer's points with the rate levels (x as c), for the helpers the
// two modes share.
func (r *rater) pts2points() {
	r.analyzer.pts = r.analyzer.pts[:0]
	for _, p := range r.pts {
		r.analyzer.pts = append(r.analyzer.pts, point{c: p.x, tps: p.tps, lv: p.lv})
	}
}

// slo finds the SLO point on the rate axis (DESIGN §4.15): the largest offered rate meeting
// every SLO. A level passes when it is sustainable (an unsustainable level's latencies grow
// without bound, whatever its window showed) and every checked p95 is within its threshold.
// Between the last passing level L and the first failing F the point is interpolated
// linearly in the offered rate, t = (threshold − v_L) ÷ (v_F − v_L) for each SLO F fails,
// the smallest t binding; and it is never above the capacity: F failing by its
// sustainability alone, or an interpolated point past capacity_rps, puts it at the capacity
// (slo.limit "capacity"; slo_tps is then capacity_tps).
func (r *rater) slo() {
	metrics := r.rateSLOMetrics()
	if !r.sloReady(len(r.pts), metrics) {
		return
	}
	failing := func(l *Level) string {
		if m := missed(l, metrics); m != "" || l.Sustainable {
			return m
		}
		return "capacity"
	}
	fail := slices.IndexFunc(r.pts, func(p ratePoint) bool { return failing(p.lv) != "" })
	r.passing = fail
	if fail < 0 {
		r.passing = len(r.pts)
	}
	switch fail {
	case -1:
		last := r.pts[len(r.pts)-1]
		r.rr.SLORPS, r.rr.SLOTPS = Float(last.x), Float(last.tps)
		r.rr.SLOGoodputRPS = Float(last.x * r.goodShare(point{c: last.x, tps: last.tps, lv: last.lv}))
		r.warn(rateSLOBeyond(last.x))
	case 0:
		r.res.SLO.Limit = failing(r.pts[0].lv)
		r.warn(rateSLOFirstMisses(r.pts[0].x, r.res.SLO.Limit))
	default:
		r.sloBetween(metrics, r.pts[fail-1], r.pts[fail])
	}
}

// sloBetween interpolates the SLO point between the passing level L and the failing level F
// just above it (see slo), and the TPS and goodput there.
func (r *rater) sloBetween(metrics []sloMetric, L, F ratePoint) {
	bestT, limit := 1.0, "capacity"
	for _, m := range metrics {
		vl, vf := m.get(L.lv), m.get(F.lv)
		if finite(vf) && vf <= m.thr {
			continue
		}
		t := 0.0
		if finite(vf) && vf > vl {
			t = (m.thr - vl) / (vf - vl)
		}
		if t = math.Min(math.Max(t, 0), 1); t < bestT || limit == "capacity" {
			bestT, limit = t, m.name
		}
	}
	x := L.x + bestT*(F.x-L.x)
	r.rr.SLOTPS = Float(L.tps + bestT*(F.tps-L.tps))
	if c := float64(r.rr.CapacityRPS); finite(c) && r.rr.CapacityBound != "at_least" && x > c {
		// Past capacity no rate is sustained, whatever a window showed: the point is the
		// capacity, even below L when L, taken for sustainable, lay above it.
		x, limit = c, "capacity"
		r.rr.SLOTPS = r.rr.CapacityTPS
	}
	r.res.SLO.Limit = limit
	r.rr.SLORPS = Float(x)
	r.rr.SLOBracket = []Float{Float(L.x), Float(F.x)}
	// Below capacity the completion rate is the offered rate; goodput is that at L's good
	// share (not interpolated towards F, most of whose requests miss the SLO by construction).
	if !finite(float64(L.lv.GoodputQPS)) || !(float64(L.lv.QPS) > 0) {
		r.warn(sloGoodputUnknown())
		return
	}
	if share := r.goodShare(point{c: L.x, tps: L.tps, lv: L.lv}); finite(share) {
		r.rr.SLOGoodputRPS = Float(x * share)
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
			r.warn(capacityNoTarget())
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
		r.warn(capacityNoSLO())
	}
	if r.rr.CapacityRPS.OK() {
		c.ReplicasAtCapacity = replicas(float64(r.rr.CapacityRPS), float64(r.rr.CapacityTPS))
		c.CostPerMTokensAtCapacity = p.costPerM(float64(r.rr.CapacityTPS))
	} else {
		r.warn(rateCapacityUnknown())
	}
	c.costs(p)
	r.res.Capacity = c
}
