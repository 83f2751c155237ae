package analysis

import (
	"math"
	"slices"

	"github.com/kneecap/kneecap/record"
)

// sloMetric is one SLO as checked: its name (ttft_p99), threshold in ms and the level's
// percentile in ms.
type sloMetric struct {
	name string
	pct  int
	thr  float64
	get  func(*Level) float64
}

// slo finds the SLO point on either axis (DESIGN §4.7, §4.15): the largest x meeting every
// SLO, read on the latencies a user waited (TTFT and E2E from the scheduled arrival where a
// level has them: userLatencyOf). A level passes when every checked percentile is within its
// threshold and, on an open loop, it is sustainable (an unsustainable level's latencies grow
// without bound, whatever its window showed: sloMiss). The point is interpolated between the
// last passing valid level and the first failing one (sloBetween; sloPoints: an imprecise
// level too thin for the SLOs' percentiles takes no part), or capped by an excluded
// closed-loop level's breach below it (sloCapped).
func (a *analyzer) slo() {
	metrics := a.sloMetrics(userLatencyOf)
	pts := a.sloPoints(metrics)
	if !a.sloReady(len(pts), metrics) {
		return
	}
	passes := func(l *Level) bool { return sloMiss(l, metrics) == "" }
	fail := slices.IndexFunc(pts, func(p point) bool { return !passes(p.lv) })
	a.passing = fail
	if fail < 0 {
		a.passing = len(pts)
	} else {
		a.breachAt = pts[fail].x
	}
	if b := a.excludedBreach(pts, metrics, passes); b != nil && (fail < 0 || b.x < pts[fail].x) {
		a.breachAt = b.x
		a.sloCapped(pts, b)
		return
	}
	a.sloClientEffects(pts, metrics, fail)
	switch fail {
	case -1:
		last := pts[len(pts)-1]
		a.sloAt(last.x, last.tps, last)
		if a.res.Rate != nil {
			a.warn(rateSLOBeyond(last.x))
		} else {
			a.res.SLO.Bound = "at_least"
			a.warn(sloBeyond(last.x))
		}
	case 0:
		first := pts[0]
		a.res.SLO.Limit = sloMiss(first.lv, metrics)
		if a.res.Rate != nil {
			a.warn(rateSLOFirstMisses(first.x, a.res.SLO.Limit))
		} else {
			a.warn(sloFirstMisses(first.x, a.res.SLO.Limit))
		}
	default:
		a.sloBetween(metrics, pts[fail-1], pts[fail])
	}
}

// sloMiss returns the name of the first SLO of metrics that l misses, "capacity" when it
// meets them all but is an unsustainable open-loop level, "" when it passes.
func sloMiss(l *Level, metrics []sloMetric) string {
	if m := missed(l, metrics); m != "" || !l.IsRate() || l.Sustainable {
		return m
	}
	return "capacity"
}

// sloAt sets the SLO point at x on the axis with tps output tokens/s there, and its goodput
// from good, the last level meeting every SLO (sloGoodput).
func (a *analyzer) sloAt(x, tps float64, good point) {
	if rr := a.res.Rate; rr != nil {
		rr.SLORPS, rr.SLOTPS = Float(x), Float(tps)
	} else {
		a.res.SLO.MaxConcurrency, a.res.SLO.TPS = Float(x), Float(tps)
	}
	a.sloGoodput(good, x)
}

// sloPoints are the valid levels the SLO point is read from: every one but an imprecise level
// (kept with fewer completions than min_requests, DESIGN §4.1) with fewer successful requests
// than the SLOs' highest percentile needs to be more than its largest one
// (record.MinPercentileSamples: 20 for p95), which is left out with a warning.
func (a *analyzer) sloPoints(metrics []sloMetric) []point {
	need := 0
	for _, m := range metrics {
		need = max(need, record.MinPercentileSamples(float64(m.pct)))
	}
	var out []point
	for _, p := range a.pts {
		if ok := p.lv.Requests - p.lv.Errors; p.lv.Imprecise && !p.lv.IsRate() && ok < need {
			a.warn(sloThinLevel(p.x, ok, need))
			continue
		}
		out = append(out, p)
	}
	return out
}

// sloMetrics sets the result's thresholds from the options and returns the SLOs that some
// valid level reports, with lat giving a level's latencies by metric (Checked names them).
// A percentile no valid level reports is checked at the next higher one that some level
// does (p99 for p95: stricter, never looser), with a warning; a threshold whose metric no
// level reports at or above its percentile is ignored with a warning.
func (a *analyzer) sloMetrics(lat func(*Level, string) Latency) []sloMetric {
	s := a.opts.SLO
	ms := func(d float64) Float {
		if d > 0 {
			return Float(d / 1e6)
		}
		return NaN()
	}
	a.res.SLO.TTFTP95MS, a.res.SLO.TPOTP95MS, a.res.SLO.E2EP95MS = ms(float64(s.TTFTP95)), ms(float64(s.TPOTP95)), ms(float64(s.E2EP95))
	a.res.SLO.Objectives = nil
	var metrics []sloMetric
	for _, o := range s.Objectives() {
		ro := SLOObjective{Name: o.Name(), Metric: o.Metric, Percentile: o.Percentile, MaxMS: ms(float64(o.Max))}
		if m, ok := a.sloMetric(o, lat); ok {
			if m.name != ro.Name {
				ro.CheckedAs = m.name
				a.warn(sloHigherPercentile(ro.Name, m.name))
			}
			metrics = append(metrics, m)
			a.res.SLO.Checked = append(a.res.SLO.Checked, m.name)
		} else if len(a.pts) > 0 {
			a.warn(sloUnreported(ro.Name))
		}
		a.res.SLO.Objectives = append(a.res.SLO.Objectives, ro)
	}
	return metrics
}

// sloReady reports whether the SLO point can be sought on n valid levels with metrics, the
// SLOs they report; when not, it warns why: no SLO set, no valid level, no SLO reported.
func (a *analyzer) sloReady(n int, metrics []sloMetric) bool {
	switch {
	case !a.opts.SLO.Any():
		a.warn(fixed(warnSLOUnset))
	case n == 0:
		a.warn(fixed(warnSLONoLevel))
	case len(metrics) == 0:
		a.warn(fixed(warnSLONoMetric))
	default:
		return true
	}
	return false
}

// missed returns the name of the first of metrics that l misses (its value unknown or above
// the threshold), "" when l meets every one.
func missed(l *Level, metrics []sloMetric) string {
	for _, m := range metrics {
		if v := m.get(l); !finite(v) || v > m.thr {
			return m.name
		}
	}
	return ""
}

// crossAt returns where between the passing level L (0) and the failing level F (1) above it
// m crosses its threshold, interpolated linearly in m's value (0 when F's is unknown or not
// above L's), and whether F misses m at all.
func crossAt(m sloMetric, L, F point) (t float64, crossed bool) {
	vl, vf := m.get(L.lv), m.get(F.lv)
	if finite(vf) && vf <= m.thr {
		return 0, false
	}
	if finite(vf) && vf > vl {
		t = (m.thr - vl) / (vf - vl)
	}
	return math.Min(math.Max(t, 0), 1), true
}

// sloMetric returns the check of objective o: at its percentile when some valid level
// reports it, else at the lowest higher percentile some valid level reports.
func (a *analyzer) sloMetric(o Objective, lat func(*Level, string) Latency) (sloMetric, bool) {
	for _, pct := range SLOPercentiles {
		if pct < o.Percentile {
			continue
		}
		get := func(l *Level) float64 { return float64(lat(l, o.Metric).Percentile(pct)) }
		for _, p := range a.pts {
			if finite(get(p.lv)) {
				name := Objective{Metric: o.Metric, Percentile: pct}.Name()
				return sloMetric{name, pct, float64(o.Max) / 1e6, get}, true
			}
		}
	}
	return sloMetric{}, false
}

// sloBetween interpolates the SLO point between the passing level L and the failing level F
// just above it: at the fraction t of the way from L to F where the first SLO that F misses
// crosses its threshold (crossAt; t = 1 with limit "capacity" when F misses by its
// sustainability alone), on log concurrency on a closed loop and linearly in the rate on an
// open one (Axis.Between), its TPS interpolated linearly in t. On an open loop the point is
// never above the capacity: an interpolated point past capacity_rps is put at the capacity
// (limit "capacity"; its TPS the capacity's). The goodput is L's (sloGoodput), not
// interpolated towards F, most of whose requests miss the SLO by construction.
func (a *analyzer) sloBetween(metrics []sloMetric, L, F point) {
	t, limit := 1.0, "capacity"
	for _, m := range metrics {
		if ct, crossed := crossAt(m, L, F); crossed && (ct < t || limit == "capacity") {
			t, limit = ct, m.name
		}
	}
	if L.x == F.x && !a.res.Axis().IsRate() {
		t = 0 // no log-concurrency step to interpolate on
	}
	x, tps := a.res.Axis().Between(L.x, F.x, t), L.tps+t*(F.tps-L.tps)
	bracket := []Float{Float(L.x), Float(F.x)}
	if rr := a.res.Rate; rr != nil {
		if c := float64(rr.CapacityRPS); finite(c) && rr.CapacityBound != "at_least" && x > c {
			// Past capacity no rate is sustained, whatever a window showed: the point is
			// the capacity, even below L when L, taken for sustainable, lay above it.
			x, tps, limit = c, float64(rr.CapacityTPS), "capacity"
		}
		rr.SLOBracket = bracket
	} else {
		a.res.SLO.Bracket = bracket
	}
	a.res.SLO.Limit = limit
	if lq, lg := float64(L.lv.QPS), float64(L.lv.GoodputQPS); !(lq > 0) || !finite(lg) || a.res.Rate == nil && !finite(float64(F.lv.QPS)) {
		a.sloAt(x, tps, point{x: x})
		a.warn(fixed(warnSLOGoodputUnknown))
		return
	}
	a.sloAt(x, tps, L)
}

// sloGoodput sets the goodput at the SLO point x from p, the last level meeting every SLO
// (DESIGN §4.7), when it was counted under these SLOs (goodShare): on a closed loop the
// goodput measured at p; on an open loop, where below capacity the completion rate is the
// offered rate, x times p's good share. A point p without a level leaves it null.
func (a *analyzer) sloGoodput(p point, x float64) {
	share := math.NaN()
	if p.lv != nil {
		share = a.goodShare(p)
	}
	if rr := a.res.Rate; rr != nil {
		if finite(share) {
			rr.SLOGoodputRPS = Float(x * share)
		}
		return
	}
	a.res.SLO.GoodputQPS = NaN()
	if finite(share) {
		a.res.SLO.GoodputQPS, a.res.SLO.GoodputConcurrency = p.lv.GoodputQPS, p.lv.Concurrency
	}
}

// goodShare returns a passing level's goodput ÷ QPS, or NaN when its goodput cannot have been
// counted under these SLOs: a request counts as good when it meets, for each of TTFT, TPOT
// and E2E, the threshold of the highest percentile set on it (RequestLimits), and meeting
// that percentile pct leaves at most (100 − pct)% of requests failing it, so the good share
// is at least 1 − Σ (100 − pct)/100 (less 10 points for the two populations: latencies are
// over requests sent in the window, goodput over completions in it). A level-summary CSV's
// goodput_qps was counted under whatever SLO its writer used.
func (a *analyzer) goodShare(p point) float64 {
	q, g := float64(p.lv.QPS), float64(p.lv.GoodputQPS)
	if !(q > 0) || !finite(g) {
		return math.NaN()
	}
	if share := g / q; share >= 1-a.opts.SLO.requestSlack()-0.10 {
		return share
	}
	a.warn(sloOtherGoodput(p.x, 100*g/q))
	return math.NaN()
}

// sloClientEffects warns when a level the SLO point rests on — the first level of pts that
// misses the SLOs (index fail) and the one before it, or the largest when every one passes —
// measured an SLO's number with an estimated client effect above its tolerance (a tail the
// verdict does not judge, such as itl_p99: DESIGN §3.3): the SLO point is that uncertain there.
func (a *analyzer) sloClientEffects(pts []point, metrics []sloMetric, fail int) {
	var at []point
	switch {
	case fail < 0:
		at = pts[len(pts)-1:]
	case fail == 0:
		at = pts[:1]
	default:
		at = pts[fail-1 : fail+1]
	}
	for _, p := range at {
		for _, m := range metrics {
			if e, ok := p.lv.ClientEffect[m.name]; ok && e > p.lv.ClientTolerance {
				a.warn(sloClientEffect(a.res.Axis(), p.x, m.name, e, p.lv.ClientTolerance))
			}
		}
	}
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
