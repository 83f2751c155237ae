package analysis

import "strings"

// Levels excluded because their latency was still rising are evidence of overload, not missing
// data (DESIGN §4.3, §4.4): a queue was still growing there, so the server was past its knee,
// and the TTFT they measured is a lower bound of where it was heading.

// risingLevels returns a closed loop's excluded levels whose TTFT was still rising across the
// window (Level.LatencyRising) and whose latencies the client cannot have made
// (latencyTrusted), as points, by concurrency.
func (a *analyzer) risingLevels() []point {
	if a.res.Axis().IsRate() {
		return nil // an open loop keeps its unsustainable levels valid: no excluded evidence
	}
	var out []point
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		if lv.Valid || lv.Superseded || !lv.LatencyRising || lv.Concurrency <= 0 || !a.latencyTrusted(lv) {
			continue
		}
		out = append(out, point{x: float64(lv.Concurrency), tps: float64(a.ys.tps(lv)), lv: lv})
	}
	return out
}

// latencyTrusted reports whether lv's TTFT describes the server: a level that is not
// client-bound, or one whose estimated client effect on every TTFT percentile is within its
// tolerance (bound for another number: its load, ITL).
func (a *analyzer) latencyTrusted(lv *Level) bool {
	if !lv.ClientBound {
		return true
	}
	known := false
	for name, e := range lv.ClientEffect {
		if strings.HasPrefix(name, "ttft_p") {
			known = true
			if e > lv.ClientTolerance {
				return false
			}
		}
	}
	return known
}

// kneeOverload warns when a level whose latency was still rising (an overloaded server) lies
// below the headline knee, or when there is no knee: the knee is then at most that level.
func (a *analyzer) kneeOverload() {
	rising := a.risingLevels()
	if len(rising) == 0 {
		return
	}
	at := rising[0].x
	switch k := a.res.Knee; {
	case k == nil || !k.Concurrency.OK():
		a.warn(kneeAtMostOverload(at))
	case float64(k.Concurrency) > at:
		a.warn(kneeAboveOverload(float64(k.Concurrency), at))
	}
}
