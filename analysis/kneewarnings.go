package analysis

import (
	"fmt"
	"math"
)

// The warnings of the throughput curve: the fits, the knee and its interval, the TTFT
// blow-up, overload and the operating point.

// fitFailed: the throughput model m could not be fitted.
func fitFailed(m Method, err error) warning {
	return newWarning(warnFitFailed, string(m), "%s: %v", m, err)
}

// uslNoPeak: the USL curve fitted with coherency kappa has no peak.
func uslNoPeak(kappa Float) warning {
	return newWarning(warnUSLNoPeak, "", "%s: κ = %.3g: the fitted curve has no peak (no coherency delay)", MethodUSL, float64(kappa))
}

// kneedleNone: Kneedle finds no knee on the throughput curve.
func kneedleNone() warning {
	return newWarning(warnKneedleNone, "", "%s: no knee found on the throughput curve", MethodKneedle)
}

// kneedleEdge: the only knee Kneedle finds is the first level, at concurrency first.
func kneedleEdge(first float64) warning {
	return newWarning(warnKneedleEdge, "", "%s: no knee: the only knee %s finds is the first level (concurrency %g), an edge artefact",
		MethodKneedle, MethodKneedle.Label(), first)
}

// noKneeModel: none of the knee models could be fitted.
func noKneeModel() warning {
	return newWarning(warnNoKneeModel, "", "no knee: none of the %s, %s and %s models could be fitted. Next: sweep levels that show the rise and the plateau, several doublings apart (e.g. --levels 1,2,4,8,16,32,64,128)",
		MethodUSL.Label(), MethodBatch.Label(), MethodHinge.Label())
}

// kneeSpan: the valid levels from lo to hi span less than one doubling, so there is no
// marginal-gain point; answer says which it would have been (AnswerKnee when it would be the
// headline, else AnswerEfficientPoint).
func kneeSpan(answer string, lo, hi float64) warning {
	w := newWarning(warnKneeSpan, "", "no %s: the valid levels span less than one doubling (%g to %g). Next: sweep levels several doublings apart (--levels 1,2,4,8,…)", pointName(answer), lo, hi)
	w.answer = answer
	return w
}

// kneeBeyond: throughput still grows growPct per doubling at the largest valid level top, so
// there is no marginal-gain point (answer as for kneeSpan).
func kneeBeyond(answer string, growPct, top, gain float64) warning {
	w := newWarning(warnKneeBeyond, "", "no %s: throughput still grows %.0f%% per doubling at concurrency %g (the largest valid level, knee_gain %.0f%%). Next: extend the sweep past %g (%s)",
		pointName(answer), growPct, top, gain*100, top, beyond(top))
	w.answer = answer
	return w
}

// kneeAtBottom: one doubling from the smallest valid level lo already adds less than gain
// (answer, the marginal-gain point, as for kneeSpan).
func kneeAtBottom(answer string, lo, gain float64) warning {
	next := fmt.Sprintf("measure lower concurrencies (add %s to --levels)", lowerLevels(lo))
	if lo <= 1 {
		next = "none: one request at a time already takes the server's throughput (it does not batch)"
	}
	w := newWarning(warnKneeAtBottom, "", "%s at or below the smallest valid level (concurrency %g): one doubling already adds < %.0f%%. Next: %s",
		pointName(answer), lo, gain*100, next)
	w.answer = answer
	return w
}

// kneeNoPlateau: the best fit, of method m, is a sharp-knee model but its breakpoint cannot be
// the headline (why): the knee falls back to the marginal-gain rule.
func kneeNoPlateau(m Method, why string) warning {
	return newWarning(warnKneeNoPlateau, "", "knee: the %s model fits best but %s; the headline knee is the marginal-gain point instead, not the onset of the plateau",
		m.Label(), why)
}

// kneeAtMostOverload: no knee was found, but at concurrency at latency was still rising (an
// excluded level): the server was past its knee there.
func kneeAtMostOverload(at float64) warning {
	return newWarning(warnKneeOverload, "", "knee: none from the fits, but at concurrency %g (excluded) TTFT was still rising across the window, a queue still growing: the knee is at most %g. Next: rerun with levels up to %g (--levels) and a longer --max-duration so that the rise is measured steady",
		at, at, at)
}

// kneeAboveOverload: the headline knee k lies above concurrency at, where latency was still
// rising (an excluded level).
func kneeAboveOverload(k, at float64) warning {
	return newWarning(warnKneeOverload, "", "knee: the knee at concurrency %s lies above %g, where TTFT was still rising across the window (an excluded level, a queue still growing): the server may saturate at or below %g",
		fconcurrency(k), at, at)
}

// kneeDisagree: the estimate v of method m is more than a factor disagreement from the
// headline knee k, read from the curve of method headline by rule.
func kneeDisagree(m Method, v, k float64, headline Method, rule KneeRule, gain float64) warning {
	how := fmt.Sprintf("%.0f%% per doubling", gain*100)
	if rule == RulePlateauOnset {
		how = "plateau onset"
	}
	return newWarning(warnKneeDisagree, string(m), "knee methods disagree: %s at concurrency %.3g vs the headline knee at %.3g (%s, %s), more than a factor %g apart",
		m.EstimateLabel(), v, k, headline.Label(), how, disagreement)
}

// kneeGap: the headline knee k lies between the measured levels lo and hi, more than a
// doubling apart.
func kneeGap(k, lo, hi float64) warning {
	return newWarning(warnKneeGap, "", "knee: the headline knee (%.3g) lies between the measured levels %g and %g, %.3g× apart: it is read from the fitted curve between them; measure levels in between to pin it down",
		k, lo, hi, hi/lo)
}

// bootstrapFewLevels: n valid levels are too few for a bootstrap interval.
func bootstrapFewLevels(n int) warning {
	return newWarning(warnBootstrapFewLevels, "", "bootstrap: %d valid levels leave %d residual degree(s) of freedom after a %d-parameter fit: no 95%% interval; measure at least %d levels",
		n, n-fitParams, fitParams, minIntervalLevels)
}

// bootstrapFewValues: only got of b resamples gave a value of what (the knee, the efficient
// point; "" when the refits themselves failed).
func bootstrapFewValues(what string, got, b int) warning {
	if what == "" {
		return newWarning(warnBootstrapFewValues, what, "bootstrap: only %d of %d resamples gave a value: no interval", got, b)
	}
	return newWarning(warnBootstrapFewValues, what, "bootstrap: only %d of %d resamples gave a value of the %s: no interval", got, b, what)
}

// blowupOneLevel: only the level at concurrency c has a TTFT (its statistic stat).
func blowupOneLevel(c float64, stat string) warning {
	return newWarning(warnBlowupOneLevel, "", "no TTFT blow-up: only one valid level (concurrency %g) has a TTFT %s: nothing to compare it with. Next: sweep more levels (--levels 1,2,4,…)", c, stat)
}

// blowupNone: TTFT (its statistic stat; "" is p50) stays within blowupFactor of the first
// level's baseMS up to top.
func blowupNone(stat string, baseMS, top float64) warning {
	if stat == "" {
		stat = "p50"
	}
	return newWarning(warnBlowupNone, "", "no TTFT blow-up: TTFT %s stays within %gx of the first level's %.0f ms up to concurrency %g. Next: extend the sweep past %g (%s): queueing past saturation blows TTFT up",
		stat, blowupFactor, baseMS, top, top, beyond(top))
}

// blowupUnsupported: TTFT (its statistic stat; "" is p50) rose from firstMS to lastMS up to
// concurrency top, but not on a ramp the levels support (DESIGN §4.4).
func blowupUnsupported(stat string, firstMS, lastMS, top float64) warning {
	if stat == "" {
		stat = "p50"
	}
	return newWarning(warnBlowupUnsupported, "", "no TTFT blow-up claimed: TTFT %s rises from %.3g ms to %.3g ms (%.1fx) up to concurrency %g, short of a blow-up (at least %d levels past it and a %gx rise over the flat part). Next: extend the sweep past %g (%s) to see whether it keeps rising",
		stat, firstMS, lastMS, lastMS/firstMS, top, blowupMinPast, blowupMinRise, top, beyond(top))
}

// blowupAtBottom: the fit puts the TTFT blow-up at or below the smallest level lo, where TTFT
// (statistic stat) already rises: its flat baseline was not measured, so the blow-up is a
// bound, not a point.
func blowupAtBottom(stat string, lo float64) warning {
	if stat == "" {
		stat = "p50"
	}
	return newWarning(warnBlowupAtBottom, "", "TTFT blow-up at or below the smallest level (concurrency %g): TTFT %s already rises from there, so its flat baseline was not measured. Next: measure lower concurrencies (add %s to --levels)",
		lo, stat, lowerLevels(lo))
}

// blowupGap: the measured TTFT only brackets the blow-up, between lastFlat and firstHigh;
// fitAt is where the fit puts it (NaN for the fallback, which has no fit).
func blowupGap(base, lastFlat, firstHigh, fitAt float64) warning {
	fit := ""
	if finite(fitAt) {
		fit = fmt.Sprintf(" (the fit puts it at %.3g)", fitAt)
	}
	return newWarning(warnBlowupGap, "", "TTFT blow-up: TTFT p50 stays within 2× its baseline (%.3g ms) up to concurrency %g and exceeds it at %g: the blow-up lies between them, where no level was measured%s; measure levels in between to pin it down",
		base, lastFlat, firstHigh, fit)
}

// overloadDetected: throughput falls dropPct past its peak peakTPS at peakC, below
// 1 − overloadDrop of it from concurrency from.
func overloadDetected(dropPct, peakTPS, peakC, from float64) warning {
	return newWarning(warnOverload, "", "overload: throughput falls %.0f%% past its peak of %.0f tokens/s at concurrency %g (below %.0f%% of the peak from concurrency %g)",
		dropPct, peakTPS, peakC, (1-overloadDrop)*100, from)
}

// overloadNoise: the dropPct fall from concurrency from to to may be noise, for the reason
// why.
func overloadNoise(dropPct, from, to float64, why string) warning {
	return newWarning(warnOverloadNoise, "", "overload: the %.0f%% drop from concurrency %g to %g may be noise: %s; repeat those levels before trusting it", dropPct, from, to, why)
}

// noiseOverlap is why a drop may be noise: the 95% CIs cp and cl of the two levels overlap.
func noiseOverlap(cp, cl Float) string {
	return fmt.Sprintf("the 95%% confidence intervals of the two levels (±%.0f and ±%.0f tokens/s) overlap", float64(cp), float64(cl))
}

// noiseScatter is why a drop of drop tokens/s may be noise: the levels up to the peak scatter
// by rms tokens/s around the fit of method m.
func noiseScatter(rms float64, m Method, drop float64) string {
	return fmt.Sprintf("the levels up to the peak scatter by %.0f tokens/s (RMS) around the %s fit, and a drop of %.0f tokens/s is within 2.8 times that for the difference of two levels",
		rms, m.Label(), drop)
}

// operatingBeyond: power still rises at the largest valid level last.
func operatingBeyond(last float64) warning {
	return newWarning(warnOperatingBeyond, "", "operating point: power (output TPS ÷ mean E2E) still rises at the largest valid level (concurrency %g): the maximum lies beyond the measured range; extend the sweep", last)
}

// serverLimitDisagree: the estimate named what (the batch-model slot limit, the headline
// knee) at v is more than maxLimitOff from the server's limit lim.
func serverLimitDisagree(what string, v float64, lim *ServerLimit) warning {
	l := float64(lim.Slots)
	why := "the server runs no more than that at once, so throughput growing past it is not more requests decoded together: the fit does not describe this server"
	if v < l {
		why = "throughput stops growing before the server's slots are full: another resource binds first (compute, memory bandwidth, the KV cache, a prefill budget)"
	}
	return newWarning(warnServerLimit, what, "server evidence: the %s at concurrency %.3g is %.0f%% %s the server's limit of %s requests at once (%s), more than %.0f%% apart: %s",
		what, v, math.Abs(v/l-1)*100, map[bool]string{true: "below", false: "above"}[v < l], fconcurrency(l), lim.Describe(), maxLimitOff*100, why)
}
