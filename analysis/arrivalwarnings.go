package analysis

import (
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// The warnings of an arrival-rate analysis (DESIGN §4.15), one constructor per kind like
// those of the other *warnings.go files; their kinds are numbered apart from the closed loop's.
const (
	warnRateClosedLevel warnKind = 1000 + iota
	warnRateAchievedOff
	warnRateLagged
	warnRateCapacityBeyond
	warnRateNotMonotone
	warnRateCapacityBelow
	warnRateBootstrapFew
	warnRateBlowupNoTTFT
	warnRateBlowupOneLevel
	warnRateBlowupNone
	warnRateBlowupUnsupported
	warnRateSLOBeyond
	warnRateSLOFirstMisses
	warnRateUsersIgnored
	warnRateCapacityUnknown
	warnRateRealizedOff
	warnRatePlateauCapacity
)

// frps formats a rate in requests/s as the warnings print it: "20.0", "2.50", "120".
func frps(v float64) string { return Float(v).Format() }

// rateClosedLevel: a closed-loop level (concurrency c, no offered rate) among the levels of
// an arrival-rate run.
func rateClosedLevel(c int) warning {
	return newWarning(warnRateClosedLevel, fmt.Sprint(c), "level concurrency %d: dropped: a closed-loop level among the levels of an arrival-rate run (it has no offered rate)", c)
}

// rateList names each level by its offered rate with detail(l): "10 (…), 20 (…)".
func rateList(levels []*Level, detail func(*Level) string) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = frps(float64(l.OfferedRPS)) + " (" + detail(l) + ")"
	}
	return strings.Join(parts, ", ")
}

// rateAchievedOff: at levels, the achieved rate is more than MaxRateOff (or the Poisson noise
// of their arrivals) from the offered rate.
func rateAchievedOff(levels []*Level) warning {
	return newWarning(warnRateAchievedOff, "", "achieved rate: the requests sent in the window arrived more than %.0f%% (or 3 ÷ √(offered × window), the noise of a Poisson count, when larger) off the offered rate at %s requests/s: the client did not offer the load planned (an in-flight cap, a saturated client) and those levels measured another rate",
		MaxRateOff*100, rateList(levels, func(l *Level) string { return "achieved " + l.AchievedRPS.Format() }))
}

// rateRealizedOff: at levels, the realised arrival rate (the window's arrivals ÷ its length)
// is more than record.MaxRealizedOff off the offered rate.
func rateRealizedOff(levels []*Level) warning {
	return newWarning(warnRateRealizedOff, "", "realised rate: the arrivals scheduled in the window realised a rate more than %.0f%% off the offered one at %s requests/s (the schedule's random draw over a window too short to even it out, max_duration reached first): those levels are placed and judged at the rate realised; a longer max_duration brings it closer",
		100*record.MaxRealizedOff, rateList(levels, func(l *Level) string {
			return "realised " + l.RealizedRPS.Format() + ", " + offPct(float64(l.RealizedRPS), float64(l.OfferedRPS))
		}))
}

// ratePlateauCapacity: a table without achieved rates or verdicts had its capacity read from
// the plateau of its output TPS, c requests/s, and its levels past c (offered rates past)
// marked unsustainable.
func ratePlateauCapacity(c float64, past []string) warning {
	return newWarning(warnRatePlateauCapacity, "", "capacity: the table gives no achieved rates, backlog or sustainable verdicts, so the capacity is the onset of the plateau of its output TPS over the offered rate, %s requests/s; the level(s) at %s requests/s, on the plateau, are taken as unsustainable",
		frps(c), strings.Join(past, ", "))
}

// rateLagged: at sustainable levels, the schedule lag p99 exceeds max(1 ms, 1% of TTFT p50).
func rateLagged(levels []*Level) warning {
	return newWarning(warnRateLagged, "", "schedule lag: the client sent requests late, lag p99 above max(%g ms, %.0f%% of TTFT p50), at %s requests/s: its schedule slipped (a saturated client, or waits under max_concurrency); latencies from the scheduled time include the lag, those from the send time do not",
		MaxScheduleLagMS, MaxScheduleLagShare*100, rateList(levels, func(l *Level) string { return "p99 " + l.ScheduleLag.P99.Format() + " ms" }))
}

// rateCapacityBeyond: every valid level, up to top requests/s, sustained its rate.
func rateCapacityBeyond(top float64) warning {
	return newWarning(warnRateCapacityBeyond, "", "capacity: every valid level sustained its offered rate: the capacity lies beyond %s requests/s (a lower bound). Next: extend the sweep to higher rates (%s)", frps(top), moreRates(top))
}

// rateNotMonotone: the levels at off disagree with the split at the first unsustained rate
// f (a sustained rate above it, or an unsustained one below).
func rateNotMonotone(f float64, off []float64) warning {
	s := make([]string, len(off))
	for i, v := range off {
		s[i] = frps(v)
	}
	return newWarning(warnRateNotMonotone, "", "capacity: the sustainable verdicts are not monotone in the offered rate: the level(s) at %s requests/s disagree with the split below %s requests/s that fits the verdicts best (noise near capacity, or a server that changed during the sweep); the capacity is bracketed there",
		strings.Join(s, ", "), frps(f))
}

// rateCapacityBelow: the first valid level, hi requests/s, was not sustained; mu is the mean
// completion rate of the unsustainable levels.
func rateCapacityBelow(hi, mu float64) warning {
	return newWarning(warnRateCapacityBelow, "", "capacity: even the first valid level (%s requests/s) was not sustained: the capacity is below it (at most; the unsustainable levels completed %s requests/s). Next: measure lower rates (%s)", frps(hi), frps(mu), fewerRates(hi))
}

// rateBootstrapFew: n levels with a completion rate are too few for the capacity's bootstrap.
func rateBootstrapFew(n int) warning {
	return newWarning(warnRateBootstrapFew, "", "bootstrap: %d level(s) with a completion rate (< %d): the capacity's 95%% interval is its bracket between levels", n, minRateIntervalLevels)
}

// rateBlowupOneLevel: only the level at x requests/s has a TTFT stat.
func rateBlowupOneLevel(x float64, stat string) warning {
	return newWarning(warnRateBlowupOneLevel, "", "no TTFT blow-up rate: only one valid level (%s requests/s) has a TTFT %s: nothing to compare it with. Next: sweep more rates (--rates auto plans eight)", frps(x), stat)
}

// rateBlowupNone: TTFT (its statistic stat) stays within blowupFactor of the first level's
// baseMS up to top requests/s.
func rateBlowupNone(stat string, baseMS, top float64) warning {
	return newWarning(warnRateBlowupNone, "", "no TTFT blow-up rate: TTFT %s stays within %gx of the first level's %.0f ms up to %s requests/s. Next: extend the sweep to higher rates (%s)", stat, blowupFactor, baseMS, frps(top), moreRates(top))
}

// rateBlowupUnsupported: TTFT (its statistic stat) rose from firstMS to lastMS up to top
// requests/s, but not on a ramp the levels support (DESIGN §4.4).
func rateBlowupUnsupported(stat string, firstMS, lastMS, top float64) warning {
	return newWarning(warnRateBlowupUnsupported, "", "no TTFT blow-up rate claimed: TTFT %s rises from %.3g ms to %.3g ms (%.1fx) up to %s requests/s, short of a blow-up (at least %d levels past it and a %gx rise over the flat part). Next: extend the sweep to higher rates (%s)",
		stat, firstMS, lastMS, lastMS/firstMS, frps(top), blowupMinPast, blowupMinRise, moreRates(top))
}

// rateSLOBeyond: every valid level, up to last requests/s, met the SLOs and sustained its rate.
func rateSLOBeyond(last float64) warning {
	return newWarning(warnRateSLOBeyond, "", "slo: every valid level meets the SLOs and sustains its rate: the limit lies beyond %s requests/s. Next: extend the sweep to higher rates (%s)", frps(last), moreRates(last))
}

// rateSLOFirstMisses: the first valid level, first requests/s, misses limit (an SLO, or
// "capacity": it did not sustain its rate).
func rateSLOFirstMisses(first float64, limit string) warning {
	if limit == "capacity" {
		return newWarning(warnRateSLOFirstMisses, "", "slo: even the first valid level (%s requests/s) does not sustain its rate: no SLO point. Next: measure lower rates (%s)", frps(first), fewerRates(first))
	}
	return newWarning(warnRateSLOFirstMisses, "", "slo: even the first valid level (%s requests/s) misses %s: no SLO point. Next: measure lower rates (%s)", frps(first), limit, fewerRates(first))
}

// rateUsersIgnored: a concurrent-users target in the plan of an arrival-rate run.
func rateUsersIgnored(users int) warning {
	return newWarning(warnRateUsersIgnored, "", "capacity: plan.concurrent_users (%d) has no meaning for an arrival-rate run, whose load is a rate: ignored (plan qps or output_tps)", users)
}

// moreRates suggests the rates that extend a sweep past top: two more doublings.
func moreRates(top float64) string {
	return fmt.Sprintf("add %s and %s to --rates", frps(2*top), frps(4*top))
}

// fewerRates suggests the rates below lo to measure: its half and quarter.
func fewerRates(lo float64) string {
	return fmt.Sprintf("add %s and %s to --rates", frps(lo/4), frps(lo/2))
}
