package report

import (
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// The texts of an arrival-rate (open-loop) run (DESIGN §4.15, §5.2): its answer names the
// mode first, then the capacity and its rule, the maximum TPS, the TTFT blow-up rate, the SLO
// point on the rate axis, the capacity plan and which latencies were read.

// frate formats a rate in requests/s: "20.8", "4.00", "120", or "—".
func frate(v analysis.Float) string { return fnum(v) }

// rateAnswer is Answer for an arrival-rate run.
func rateAnswer(res *analysis.Result) []string {
	rr := rateResult(res)
	s := []string{capacitySentenceRate(res, rr)}
	if rr.CapacityReason != "" && rr.CapacityRPS.OK() {
		// The rule states the capacity, its bracket and interval: said once, there.
		s = []string{"Open-loop arrival-rate sweep (mode rate). Capacity rule: " + rr.CapacityReason + "."}
	}
	if tr := res.Trace; tr != nil && tr.Answer != "" {
		s = append(s, "Trace replay: "+tr.Answer)
	}
	if th := res.Throughput; th.MaxTPS.OK() {
		s = append(s, fmt.Sprintf("Maximum output throughput is %s tokens/s, at %s requests/s offered.", fnum(th.MaxTPS), frate(rr.MaxTPSRPS)))
	}
	if t := unsustainedSentence(res); t != "" {
		s = append(s, t)
	}
	s = append(s, blowupSentenceRate(rr), sloSentenceRate(res, rr))
	if c := res.Capacity; c != nil {
		s = append(s, planSentenceRate(c, res.SLO, rr))
	}
	s = append(s, energySentences(res)...)
	if t := latencyFromSentence(rr); t != "" {
		s = append(s, t)
	}
	return s
}

// capacitySentenceRate is the first sentence of an arrival-rate report without a capacity
// rule (no capacity, or an analysis.json from before capacity_reason): the mode, then the
// capacity.
func capacitySentenceRate(res *analysis.Result, rr *analysis.RateResult) string {
	head := "Open-loop arrival-rate sweep (mode rate): "
	switch {
	case len(res.Levels) == 0:
		return head + "no level was measured."
	case !anyValid(res.Levels):
		return head + fmt.Sprintf("no level is valid: all %d were excluded from the analysis (see warnings), so there is no capacity or SLO point.", len(res.Levels))
	case !rr.CapacityRPS.OK():
		return head + "no capacity was found (see warnings)."
	}
	tps := ""
	if rr.CapacityTPS.OK() {
		tps = ", " + fnum(rr.CapacityTPS) + " output tokens/s"
	}
	switch rr.CapacityBound {
	case "at_least":
		return head + fmt.Sprintf("every valid level sustained its rate, so the capacity is at least %s requests/s%s%s.", frate(rr.CapacityRPS), tps, atLeastWhy(res, rr))
	case "at_most":
		return head + fmt.Sprintf("no valid level sustained its offered rate: the capacity is about %s requests/s%s (what the unsustained levels completed)%s, below the first level.",
			frate(rr.CapacityRPS), tps, rateInterval(rr.CapacityInterval))
	}
	t := head + fmt.Sprintf("the maximum sustainable rate (capacity) is %s requests/s%s%s", frate(rr.CapacityRPS), tps, rateInterval(rr.CapacityInterval))
	if b := rr.CapacityBracket; len(b) == 2 && rr.CapacityRPS < b[0] {
		t += fmt.Sprintf(", below the %s requests/s arriving at the last level the backlog test called sustained, which completed %s/s; the next, %s requests/s, was not sustained",
			frate(b[0]), frate(completedAt(res.Levels, b[0])), frate(b[1]))
	} else if len(b) == 2 {
		t += fmt.Sprintf(", between the sustained %s and the unsustained %s requests/s", frate(b[0]), frate(b[1]))
	}
	return t + "."
}

// atLeastWhy says what the at_least bound is: beyond the measured range when it is the
// largest rate that arrived, else the largest completion rate measured (the levels above it
// arrived faster than anything was seen completed).
func atLeastWhy(res *analysis.Result, rr *analysis.RateResult) string {
	top := analysis.NaN()
	for i := range res.Levels {
		if l := &res.Levels[i]; l.IsRate() && l.Valid && !(l.ArrivalRate() <= top) {
			top = l.ArrivalRate()
		}
	}
	if !top.OK() || rr.CapacityRPS >= top {
		return ", beyond the measured range"
	}
	return fmt.Sprintf(", the largest completion rate measured (no more was seen completed, though up to %s requests/s arrived)", frate(top))
}

// rateInterval formats a 95% interval of requests/s: " (95% interval 19.9–20.9)", with "…"
// for an open end, or "".
func rateInterval(iv [2]analysis.Float) string {
	lo, hi := iv[0], iv[1]
	switch {
	case lo.OK() && hi.OK():
		a, b := fspan(lo, hi)
		return fmt.Sprintf(" (95%% interval %s–%s)", a, b)
	case hi.OK():
		return fmt.Sprintf(" (95%% interval up to %s)", frate(hi))
	case lo.OK():
		return fmt.Sprintf(" (95%% interval from %s)", frate(lo))
	}
	return ""
}

// unsustainedSentence names the valid levels that did not sustain their rate, or "".
func unsustainedSentence(res *analysis.Result) string {
	var xs []string
	for _, l := range sortedLevels(res) {
		if l.IsRate() && l.Valid && !l.Sustainable {
			xs = append(xs, frate(l.OfferedRPS))
		}
	}
	if len(xs) == 0 {
		return ""
	}
	why := "the backlog grew"
	if rr := res.Rate; rr != nil && rr.CapacityRule == analysis.CapacityRulePlateau {
		why = "their output TPS is on the plateau"
	}
	return fmt.Sprintf("The level(s) at %s requests/s did not sustain their rate (%s): they are points above capacity, not invalid levels.", joinAnd(xs), why)
}

// blowupStat is the TTFT statistic rr's blow-up rate was found on: p50 unless it names another.
func blowupStat(rr *analysis.RateResult) string {
	if rr.TTFTBlowupStat == "" {
		return "p50"
	}
	return rr.TTFTBlowupStat
}

// blowupSentenceRate states the TTFT blow-up rate.
func blowupSentenceRate(rr *analysis.RateResult) string {
	if !rr.TTFTBlowupRPS.OK() {
		return noBlowup
	}
	stat := blowupStat(rr)
	ax := analysis.AxisOf(record.ModeRate)
	t := blowupSentence("TTFT ("+stat+")", ax.At(frate(rr.TTFTBlowupRPS)), rr.TTFTBlowupMethod, "baseline", rr.TTFTBlowupBaselineMS, rr.TTFTBlowupSlope, ax.Per())
	if stat != "p50" {
		t += fmt.Sprintf("; the levels report no TTFT p50, so the blow-up is read on the %s", stat)
	}
	return t + "."
}

// sloSentenceRate states the SLO point on the rate axis.
func sloSentenceRate(res *analysis.Result, rr *analysis.RateResult) string {
	slo := res.SLO
	names := sloNames(slo)
	switch {
	case names == "":
		return "No SLO was set."
	case !rr.SLORPS.OK() && slo.Limit == "capacity":
		return "Not even the first level sustains its rate, so no rate meets the SLO (" + names + ")."
	case !rr.SLORPS.OK() && limitName(slo.Limit) != "":
		return "Not even the first level meets the SLO (" + names + "); " + limitName(slo.Limit) + " binds."
	case !rr.SLORPS.OK():
		return "The SLO (" + names + ") could not be checked against any level (see warnings)."
	}
	var at []string
	if rr.SLOTPS.OK() {
		at = append(at, fnum(rr.SLOTPS)+" tokens/s")
	}
	if rr.SLOGoodputRPS.OK() {
		at = append(at, "a goodput of "+frate(rr.SLOGoodputRPS)+" requests/s")
	}
	if slo.Limit == "" {
		t := fmt.Sprintf("The SLO (%s) holds at every valid level, each sustained, so the SLO point is ≥ %s requests/s, beyond the measured range", names, frate(rr.SLORPS))
		if len(at) > 0 {
			t += "; there: " + strings.Join(at, " and ")
		}
		return t + "."
	}
	t := fmt.Sprintf("The SLO (%s) holds up to %s requests/s", names, floorConc(rr.SLORPS))
	if b := rr.SLOBracket; len(b) == 2 && b[0].OK() && b[1].OK() {
		t += fmt.Sprintf(" (measured: %s meets it, %s does not)", frate(b[0]), frate(b[1]))
	}
	if len(at) > 0 {
		t += " with " + strings.Join(at, " and ")
	}
	if slo.Limit == "capacity" {
		return t + "; the capacity binds: past it no rate is sustained, whatever a window's latencies showed."
	}
	return t + "; " + limitName(slo.Limit) + " binds first."
}

// planSentenceRate states the capacity plan of an arrival-rate run.
func planSentenceRate(c *analysis.Capacity, slo analysis.SLOResult, rr *analysis.RateResult) string {
	t := planHead(c)
	at := "the SLO point"
	if slo.Limit == "" && rr.SLORPS.OK() {
		at = fmt.Sprintf("%s requests/s (the largest level; the SLO point is ≥ it)", frate(rr.SLORPS))
	}
	t += replicasAtSLO(c) + fmt.Sprintf(" at %s, %s at capacity (no headroom)", at, fint(c.ReplicasAtCapacity))
	if c.CostPerMTokens.OK() || c.CostPerMTokensAtCapacity.OK() {
		t += fmt.Sprintf("; %s per 1M output tokens at the SLO point, %s at capacity", fusd(c.CostPerMTokens), fusd(c.CostPerMTokensAtCapacity))
	}
	return t + "."
}

// latencyFromSentence says which latencies the answers read.
func latencyFromSentence(rr *analysis.RateResult) string {
	switch rr.LatencyFrom {
	case "scheduled":
		return "TTFT and E2E are measured from each request's scheduled arrival (the user's view, which counts the client's schedule lag and any wait for max_concurrency: no coordinated omission); the level table gives TTFT p95 from the send time (the server's view) beside them."
	case "sent":
		return "The levels carry no latencies from the scheduled arrival (a table): TTFT and E2E are from the send time (the server's view)."
	case "mixed":
		return "Some levels carry latencies from the scheduled arrival and some do not: each is read from the scheduled arrival where it has them, else from the send time."
	}
	return ""
}
