package analysis

import (
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// An excluded level still bounds the SLO point (DESIGN §4.7): a breach it measured is a
// breach, whatever kept it out of the fits (not steady, errors, interrupted), unless the
// client can have caused it. Such a level below the first valid level that misses the SLOs
// caps the SLO point at the last valid level meeting them.

// sloBreach is an excluded level whose measured latency breaches an SLO.
type sloBreach struct {
	x          float64
	lv         *Level
	name       string // the objective breached, as checked (ttft_p95)
	value, thr float64
}

// excludedBreach returns a closed loop's excluded level of smallest concurrency whose measured latency
// breaches one of metrics — enough requests for its percentile, and a breach the client's
// lateness cannot explain (breachStands) — and above which no level of pts meets every SLO
// (passes); nil when there is none. A breach contradicted by a valid level above it that
// passes is not used, with a warning. An open loop has none: it keeps its unsustainable
// levels valid, and its excluded levels are not evidence of where the SLO breaks.
func (a *analyzer) excludedBreach(pts []point, metrics []sloMetric, passes func(*Level) bool) *sloBreach {
	if a.res.Axis().IsRate() {
		return nil
	}
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		if lv.Valid || lv.Superseded || lv.Concurrency <= 0 {
			continue
		}
		b := a.breachOf(lv, metrics)
		if b == nil {
			continue
		}
		for _, p := range pts {
			if p.x > b.x && passes(p.lv) {
				a.warn(sloBreachContradicted(b.x, b.name, p.x))
				b = nil
				break
			}
		}
		if b != nil {
			return b
		}
	}
	return nil
}

// breachOf returns lv's breach of the first of metrics it breaches, or nil.
func (a *analyzer) breachOf(lv *Level, metrics []sloMetric) *sloBreach {
	ok := lv.Requests - lv.Errors
	for _, m := range metrics {
		v := m.get(lv)
		if !finite(v) || v <= m.thr || ok < record.MinPercentileSamples(float64(m.pct)) || !a.breachStands(lv, m.name, v, m.thr) {
			continue
		}
		return &sloBreach{x: float64(lv.Concurrency), lv: lv, name: m.name, value: v, thr: m.thr}
	}
	return nil
}

// breachStands reports whether a breach v > thr of SLO name measured at lv is the server's:
// always on a level that is not client-bound; on a client-bound one only when the client's
// estimated effect on that number (Level.ClientEffect) leaves it above the threshold,
// v × (1 − effect) > thr — its latencies on the kernel's clock, what that clock cannot see
// bounded. A client-bound level without an estimate for the number (the client's clock) may
// owe its breach to the load generator.
func (a *analyzer) breachStands(lv *Level, name string, v, thr float64) bool {
	if !lv.ClientBound {
		return true
	}
	e, ok := lv.ClientEffect[name]
	return ok && v*(1-e) > thr
}

// sloCapped sets the SLO point from an excluded level's breach b below the first level of pts
// that misses: the last level of pts meeting every SLO below it, a bracket to b, Bound
// "between" and the evidence named; none (Limit set) when no level below b meets them.
func (a *analyzer) sloCapped(pts []point, b *sloBreach) {
	s := &a.res.SLO
	s.Limit = b.name
	s.Evidence = fmt.Sprintf("concurrency %d measured %s %s ms > %s ms though excluded (%s)",
		b.lv.Concurrency, b.name, Float(b.value).Format(), Float(b.thr).Format(), exclusionReason(b.lv))
	var L *point
	for i := range pts {
		if pts[i].x < b.x {
			L = &pts[i]
		}
	}
	if L == nil {
		a.warn(sloExcludedBelow(b.x, s.Evidence))
		return
	}
	s.MaxConcurrency, s.TPS, s.Bound = Float(L.x), Float(L.tps), "between"
	s.Bracket = []Float{Float(L.x), Float(b.x)}
	a.sloGoodput(*L, L.x)
	a.warn(sloCappedByExcluded(L.x, b.x, s.Evidence))
}

// exclusionReason is why lv is excluded: its notes' "invalid: " reasons, joined.
func exclusionReason(lv *Level) string {
	var why []string
	for _, n := range lv.Notes {
		if r, ok := strings.CutPrefix(n, "invalid: "); ok {
			why = append(why, r)
		}
	}
	if len(why) == 0 {
		return "invalid"
	}
	return strings.Join(why, "; ")
}
