package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/kneecap/kneecap/record"
)

// ratePoint is one usable valid level of an arrival-rate run: its place on the rate axis x
// (Level.ArrivalRate: the realised rate, else the offered), its completion rate y
// (completionRate; NaN when unknown) and output TPS.
type ratePoint struct {
	x, y, tps float64
	lv        *Level
}

// rater analyzes the levels of an arrival-rate run (DESIGN §4.15).
type rater struct {
	*analyzer
	rr *RateResult
	// pts are the valid rate levels, ascending x.
	pts []ratePoint
	// passing is the number of leading pts that meet the SLO (slo sets it).
	passing int
}

// analyzeRate is Analyze for an arrival-rate run: the capacity (maximum sustainable rate)
// with its interval, the TTFT blow-up rate, the SLO point on the rate axis and the capacity
// plan from a QPS target. It does not modify levels.
func analyzeRate(levels []Level, meta Meta, opts Options) Result {
	a := &analyzer{opts: opts}
	res := Result{
		Schema:     Schema,
		Mode:       record.ModeRate,
		Meta:       meta,
		Levels:     slices.Clone(levels),
		Throughput: Throughput{MaxTPS: NaN()},
		Overload:   Overload{FromConcurrency: NaN(), DropPct: NaN()},
		SLO:        SLOResult{TTFTP95MS: NaN(), TPOTP95MS: NaN(), E2EP95MS: NaN(), MaxConcurrency: NaN(), TPS: NaN(), GoodputQPS: NaN()},
		Rate:       newRateResult(),
	}
	if res.Levels == nil {
		res.Levels = []Level{}
	}
	for i := range res.Levels {
		if rl := res.Levels[i].RateLevel; rl != nil {
			c := *rl // the result's own: the rechecks may change it
			res.Levels[i].RateLevel = &c
		}
	}
	SortLevels(res.Levels)
	a.res = &res
	r := &rater{analyzer: a, rr: res.Rate}
	r.collect()
	a.lengths()
	r.capacity()
	r.blowup()
	r.slo()
	r.trace()
	r.plan()
	res.Warnings = a.warnings.texts()
	return res
}

// collect rechecks every rate level, gathers the valid ones into r.pts, sets the maximum TPS
// and says which latencies the answers read (RateResult.LatencyFrom).
func (r *rater) collect() {
	var offRate, realizedOff, lagged, disbelieved []*Level
	for i := range r.res.Levels {
		lv := &r.res.Levels[i]
		if !lv.IsRate() {
			r.warn(rateClosedLevel(lv.Concurrency))
			continue
		}
		if lv.UsageDisbelieved > 0 {
			disbelieved = append(disbelieved, lv)
		}
		x, tps := float64(lv.OfferedRPS), float64(lv.OutputTPS)
		if !(x > 0) || !finite(x) || tps < 0 || math.IsInf(tps, 0) {
			r.warn(rateLevelDropped(x, tps))
			continue
		}
		r.recheckSustainable(lv)
		if lv.Valid {
			r.recheck(lv)
		}
		if !lv.Valid {
			r.warn(rateLevelExcluded(x, lv.Notes))
			continue
		}
		if rateOff(lv) {
			offRate = append(offRate, lv)
		}
		if realizedAstray(lv) {
			realizedOff = append(realizedOff, lv)
		}
		if lagTooLong(lv) {
			lagged = append(lagged, lv)
		}
		r.pts = append(r.pts, ratePoint{x: float64(lv.ArrivalRate()), y: completionRate(lv), tps: tps, lv: lv})
	}
	// A level is placed at the rate its window realised (DESIGN §4.15): two close offered
	// rates may realise in the other order.
	slices.SortStableFunc(r.pts, func(p, q ratePoint) int { return cmp.Compare(p.x, q.x) })
	if len(disbelieved) > 0 {
		r.warn(usageDisbelieved(disbelieved))
	}
	if len(offRate) > 0 {
		r.warn(rateAchievedOff(offRate))
	}
	if len(realizedOff) > 0 {
		r.warn(rateRealizedOff(realizedOff))
	}
	if len(lagged) > 0 {
		r.warn(rateLagged(lagged))
	}
	if len(r.pts) == 0 {
		r.warn(noValidLevels(nextAfterExclusions(r.res.Levels)))
	}
	sched, sent := 0, 0
	for _, p := range r.pts {
		if p.tps >= 0 && finite(p.tps) && (!r.res.Throughput.MaxTPS.OK() || p.tps > float64(r.res.Throughput.MaxTPS)) {
			r.res.Throughput.MaxTPS, r.rr.MaxTPSRPS = Float(p.tps), p.lv.OfferedRPS
		}
		if hasLatency(p.lv.TTFTScheduled) || hasLatency(p.lv.E2EScheduled) {
			sched++
		} else {
			sent++
		}
	}
	switch {
	case sent == 0:
		r.rr.LatencyFrom = "scheduled"
	case sched == 0:
		r.rr.LatencyFrom = "sent"
	default:
		r.rr.LatencyFrom = "mixed"
	}
}

// completionRate is lv.CompletionRate as a float64 (NaN when unknown).
func completionRate(lv *Level) float64 { return float64(lv.CompletionRate()) }

// recheckSustainable marks unsustainable a level marked sustainable whose backlog was not
// measured (a table) when its completion rate falls more than MaxRateDeficit below its
// arrival rate (Level.ArrivalRate: realised, else offered; completionRate), with a note.
func (r *rater) recheckSustainable(lv *Level) {
	if !lv.Sustainable || lv.BacklogGrowthRPS.OK() {
		return
	}
	x, q := float64(lv.ArrivalRate()), completionRate(lv)
	if !finite(q) || !(q < (1-MaxRateDeficit)*x) {
		return
	}
	what := "offered"
	if lv.RealizedRPS.OK() {
		what = "realised"
	}
	lv.Sustainable = false
	lv.Notes = append(slices.Clip(lv.Notes), fmt.Sprintf("unsustainable: its completion rate %s requests/s is %.0f%% below the %s %s (more than %.0f%%; no backlog measured); kept as a point above capacity",
		Float(q).Format(), 100*(1-q/x), what, Float(x).Format(), MaxRateDeficit*100))
}

// rateOff reports whether a level's achieved rate is more than max(MaxRateOff, 3 ÷
// √(offered × window)) from its offered rate.
func rateOff(lv *Level) bool {
	x, got := float64(lv.OfferedRPS), float64(lv.AchievedRPS)
	if !finite(got) || !(x > 0) {
		return false
	}
	tol := MaxRateOff
	if w := float64(lv.WindowS); finite(w) && w > 0 {
		tol = math.Max(tol, 3/math.Sqrt(x*w))
	}
	return math.Abs(got/x-1) > tol
}

// realizedAstray reports whether a level's realised rate is not record.RealizedWithin its
// offered rate (a table without a window: MaxRealizedOff alone).
func realizedAstray(lv *Level) bool {
	w := float64(lv.WindowS)
	if !finite(w) || !(w > 0) {
		w = math.Inf(1)
	}
	return lv.RealizedRPS.OK() && !record.RealizedWithin(float64(lv.RealizedRPS), float64(lv.OfferedRPS), w)
}

// lagTooLong reports whether a sustainable level's schedule lag p99 exceeds
// max(MaxScheduleLagMS, MaxScheduleLagShare × its TTFT p50 from the send time).
func lagTooLong(lv *Level) bool {
	p99 := float64(lv.ScheduleLag.P99)
	if !lv.Sustainable || !finite(p99) {
		return false
	}
	limit := MaxScheduleLagMS
	if t := float64(lv.TTFT.P50); finite(t) {
		limit = math.Max(limit, MaxScheduleLagShare*t)
	}
	return p99 > limit
}
