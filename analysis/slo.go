package analysis

import "math"

// sloMetric is one SLO: its name, threshold in ms and the level's p95 in ms.
type sloMetric struct {
	name string
	thr  float64
	get  func(*Level) float64
}

func (a *analyzer) slo() {
	s := a.opts.SLO
	ms := func(d float64) Float {
		if d > 0 {
			return Float(d / 1e6)
		}
		return NaN()
	}
	a.res.SLO.TTFTP95MS, a.res.SLO.TPOTP95MS, a.res.SLO.E2EP95MS = ms(float64(s.TTFTP95)), ms(float64(s.TPOTP95)), ms(float64(s.E2EP95))
	var metrics []sloMetric
	add := func(name string, thr Float, get func(*Level) float64) {
		if !thr.OK() {
			return
		}
		for _, p := range a.pts {
			if finite(get(p.lv)) {
				metrics = append(metrics, sloMetric{name, float64(thr), get})
				a.res.SLO.Checked = append(a.res.SLO.Checked, name)
				return
			}
		}
		if len(a.pts) > 0 {
			a.warn("slo: %s is set but no valid level reports it: ignored", name)
		}
	}
	add("ttft_p95", a.res.SLO.TTFTP95MS, func(l *Level) float64 { return float64(l.TTFT.P95) })
	add("tpot_p95", a.res.SLO.TPOTP95MS, func(l *Level) float64 { return float64(l.TPOT.P95) })
	add("e2e_p95", a.res.SLO.E2EP95MS, func(l *Level) float64 { return float64(l.E2E.P95) })
	set := a.res.SLO.TTFTP95MS.OK() || a.res.SLO.TPOTP95MS.OK() || a.res.SLO.E2EP95MS.OK()
	switch {
	case !set:
		a.warn("slo: no usable SLO (set ttft_p95, tpot_p95 or e2e_p95): no SLO point")
		return
	case len(a.pts) == 0:
		a.warn("slo: no valid level to check the SLOs against: no SLO point")
		return
	case len(metrics) == 0:
		a.warn("slo: no valid level reports a latency the SLOs are set on: no SLO point")
		return
	}
	passes := func(l *Level) bool {
		for _, m := range metrics {
			if v := m.get(l); !finite(v) || v > m.thr {
				return false
			}
		}
		return true
	}
	fail := -1
	for i, p := range a.pts {
		if !passes(p.lv) {
			fail = i
			break
		}
	}
	// goodShare returns a passing level's goodput ÷ QPS, or NaN when its goodput cannot have
	// been counted under these SLOs: meeting each of k SLOs at p95 leaves at most 5% of
	// requests failing each, so the good share is at least 1 − 0.05·k (less 10 points for
	// the two populations: latencies are over requests sent in the window, goodput over
	// completions in it). A level-summary CSV's goodput_qps was counted under whatever SLO
	// its writer used.
	goodShare := func(p point) float64 {
		q, g := float64(p.lv.QPS), float64(p.lv.GoodputQPS)
		if !(q > 0) || !finite(g) {
			return math.NaN()
		}
		if share := g / q; share >= 1-0.05*float64(len(metrics))-0.10 {
			return share
		}
		a.warn("slo: level %g meets every SLO at p95 but only %.0f%% of its requests count as goodput: its goodput was counted under other SLOs (a level-summary CSV written under different ones?); goodput at the SLO point is left null",
			p.c, 100*g/q)
		return math.NaN()
	}
	switch fail {
	case -1:
		last := a.pts[len(a.pts)-1]
		a.res.SLO.MaxConcurrency, a.res.SLO.TPS = Float(last.c), Float(last.tps)
		a.res.SLO.GoodputQPS = Float(float64(last.lv.QPS) * goodShare(last))
		a.warn("slo: every valid level meets the SLOs: the limit lies beyond concurrency %g", last.c)
		return
	case 0:
		first := a.pts[0]
		for _, m := range metrics {
			if v := m.get(first.lv); !finite(v) || v > m.thr {
				a.res.SLO.Limit = m.name
				break
			}
		}
		a.warn("slo: even the first valid level (concurrency %g) misses %s: no SLO point", first.c, a.res.SLO.Limit)
		return
	}
	L, F := a.pts[fail-1], a.pts[fail]
	bestT := math.Inf(1)
	for _, m := range metrics {
		vl, vf := m.get(L.lv), m.get(F.lv)
		if finite(vf) && vf <= m.thr {
			continue
		}
		t := 0.0
		if finite(vf) && vf > vl {
			t = (m.thr - vl) / (vf - vl)
		}
		t = math.Min(math.Max(t, 0), 1)
		if t < bestT {
			bestT, a.res.SLO.Limit = t, m.name
		}
	}
	if L.c == F.c {
		bestT = 0
	}
	lc := math.Log(L.c) + bestT*(math.Log(F.c)-math.Log(L.c))
	a.res.SLO.MaxConcurrency = Float(math.Exp(lc))
	a.res.SLO.Bracket = []Float{Float(L.c), Float(F.c)}
	a.res.SLO.TPS = Float(L.tps + bestT*(F.tps-L.tps))
	// Goodput is not interpolated towards the failing level: past the SLO point most of its
	// requests miss the SLO by construction, so a straight line would undercount the point
	// itself. The point meets every SLO, so its good share is taken from the last passing
	// level and applied to the interpolated QPS.
	a.res.SLO.GoodputQPS = NaN()
	lq, lg, fq := float64(L.lv.QPS), float64(L.lv.GoodputQPS), float64(F.lv.QPS)
	switch {
	case !(lq > 0) || !finite(lg) || !finite(fq):
		a.warn("slo: goodput at the SLO point unknown: the levels carry no goodput_qps")
	default:
		if share := goodShare(L); finite(share) {
			a.res.SLO.GoodputQPS = Float((lq + bestT*(fq-lq)) * share)
		}
	}
}
