package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Every warning of Analyze and CompareGate is built here, one constructor per kind; the
// phases only decide when to warn. Result.Warnings holds the texts.

// warnKind tells the kinds of warning apart (one per constructor).
type warnKind int

const (
	warnLevelDropped warnKind = iota
	warnLevelExcluded
	warnLevelImprecise
	warnNoValidLevels
	warnTooFewLevels
	warnZeroThroughput
	warnFitFailed
	warnUSLNoPeak
	warnKneedleNone
	warnKneedleEdge
	warnNoKneeModel
	warnKneeSpan
	warnKneeBeyond
	warnKneeAtBottom
	warnKneeDisagree
	warnKneeGap
	warnKneeNoPlateau
	warnKneeOverload
	warnBootstrapFewLevels
	warnBootstrapFewValues
	warnBlowupNoTTFT
	warnBlowupOneLevel
	warnBlowupNone
	warnBlowupGap
	warnBlowupUnsupported
	warnOverload
	warnOverloadNoise
	warnNoOperatingPoint
	warnOperatingMedian
	warnOperatingBeyond
	warnSLOUnreported
	warnSLOHigherPercentile
	warnSLOUnset
	warnSLONoLevel
	warnSLONoMetric
	warnSLOOtherGoodput
	warnSLOBeyond
	warnSLOFirstMisses
	warnSLOCapped
	warnSLOExcludedBelow
	warnSLOBreachContradicted
	warnSLOClientEffect
	warnSLOThinLevel
	warnSLOGoodputUnknown
	warnCapacityNoTarget
	warnCapacityNoSLO
	warnCapacityNoKnee
	warnCapacityPastBreach
	warnGateOtherSLOs
	warnPromptLengthOff
	warnOutputLengthIgnored
	warnServerLimit
	warnUsageDisbelieved
)

// warning is one warning: its kind and subject (what it is about, when one kind can be
// about several things), which de-duplicate it, and its text.
type warning struct {
	kind    warnKind
	subject string
	text    string
}

func newWarning(kind warnKind, subject, format string, args ...any) warning {
	return warning{kind: kind, subject: subject, text: fmt.Sprintf(format, args...)}
}

// levelDropped: a level with no usable concurrency or output TPS. A null TPS is "not
// measured": the warning says so rather than print NaN.
func levelDropped(concurrency int, tps float64) warning {
	got := fmt.Sprintf("%g", tps)
	switch {
	case math.IsNaN(tps):
		got = "null"
	case math.IsInf(tps, 0):
		got = "infinite"
	}
	return newWarning(warnLevelDropped, fmt.Sprint(concurrency),
		"level concurrency %d: dropped: concurrency must be > 0 and output TPS finite and ≥ 0 (output TPS %s)", concurrency, got)
}

// levelExcluded: an invalid level, with its notes.
func levelExcluded(concurrency int, notes []string) warning {
	why := "invalid"
	if len(notes) > 0 {
		why = strings.Join(notes, "; ")
	}
	return newWarning(warnLevelExcluded, fmt.Sprint(concurrency), "level concurrency %d excluded from fits: %s", concurrency, why)
}

// levelImprecise: a level kept although not steady by max_duration, with no material trend
// (Level.Imprecise): what it fell short of — its CI target, or min_requests — and its TPS with
// its 95% half-width.
func levelImprecise(lv *Level) warning {
	short := lv.impreciseWhy
	if short == "" {
		short = "short of its CI target or min_requests"
	}
	return newWarning(warnLevelImprecise, fmt.Sprint(lv.Concurrency),
		"level concurrency %d kept though imprecise (%s), with no material trend by max_duration: output TPS %s ± %s tokens/s (95%%). Next: a longer sweep.max_duration (--max-duration) measures it closer",
		lv.Concurrency, short, lv.OutputTPS.Format(), lv.OutputTPSCI95.Format())
}

// noValidLevels: every level was excluded; next says what would measure them
// (nextAfterExclusions).
func noValidLevels(next string) warning {
	return newWarning(warnNoValidLevels, "", "no valid levels: nothing to analyze. %s", next)
}

// tooFewLevels: n valid levels, fewer than the fits need; next says what would measure the
// excluded ones (nextAfterExclusions, "" when none was excluded).
func tooFewLevels(n int, next string) warning {
	if next == "" {
		next = fmt.Sprintf("Next: sweep more levels (at least %d, e.g. --levels 1,2,4,8,16,32)", MinFitLevels)
	}
	return newWarning(warnTooFewLevels, "", "too few valid levels (%d < %d): no throughput fits, no knee and no TTFT hinge fit. %s", n, MinFitLevels, next)
}

// exclusionSteps maps a reason a level is excluded (a prefix of its "invalid: " note) to the
// step that would measure it, in the order the steps are given; a client-bound level's step is
// exclusionStep's.
var exclusionSteps = []struct{ reason, step string }{
	{"client-bound", ""},
	{"not steady", "rerun with a longer --max-duration (and --retry-excluded), so that the levels settle"},
	{"error rate", "lower the concurrency, or see error_classes for what the server refused"},
	{"achieved concurrency", "the client kept fewer requests in flight than asked: see the levels' notes"},
	{"Little's-law", "requests straddled the window's edges: rerun with a longer --duration"},
	{"interrupted", "resume the run (kneecap sweep --resume DIR)"},
	{"no successful request", "no request succeeded: check the server (error_classes)"},
}

// turnaroundStep is the step for a level client-bound by its offered load alone: the client's
// own time between a stream's end and the next send is a share of so short a request cycle
// that no machine of its own removes it.
const turnaroundStep = "kneecap's own turnaround between a stream's end and the next send (a fraction of a millisecond a request) is that share of these short requests' cycle: longer requests (more output tokens) shrink it, or a larger sweep.client_tolerance accepts it"

// clientStep is the step for a client-bound level, from its note's reason: the turnaround step
// when only the offered load and the throughput estimates exceeded the tolerance, else a
// machine of its own.
func clientStep(reason string) string {
	_, list, ok := strings.Cut(reason, "client effect on ")
	list, _, _ = strings.Cut(list, " > tolerance")
	if ok {
		loadOnly := true
		for _, item := range strings.Split(list, ", ") {
			loadOnly = loadOnly && (strings.HasPrefix(item, "offered load") || strings.HasPrefix(item, "throughput"))
		}
		if loadOnly {
			return turnaroundStep
		}
	}
	return "the load generator could not keep up: run kneecap on a machine of its own, or split the load over processes (--shard I/N, docs/sharding.md)"
}

// nextAfterExclusions is the next step when levels were excluded: for each reason that
// excluded some level (not a superseded one), what would measure it; when no known reason
// did, the levels' notes.
func nextAfterExclusions(levels []Level) string {
	var steps []string
	add := func(step string) {
		if !slices.Contains(steps, step) {
			steps = append(steps, step)
		}
	}
	for _, e := range exclusionSteps {
		for i := range levels {
			lv := &levels[i]
			if lv.Valid || lv.Superseded {
				continue
			}
			for _, n := range lv.Notes {
				if r, ok := strings.CutPrefix(n, "invalid: "+e.reason); ok {
					if e.step == "" {
						add(clientStep(r))
					} else {
						add(e.step)
					}
				}
			}
		}
	}
	if len(steps) == 0 {
		for i := range levels {
			if !levels[i].Valid && !levels[i].Superseded {
				return "Next: see why each level was excluded (its notes)"
			}
		}
		return ""
	}
	return "Next: " + strings.Join(steps, "; ")
}

// beyond suggests the levels that extend a sweep past top: two more doublings.
func beyond(top float64) string {
	return fmt.Sprintf("add %s and %s to --levels", fconcurrency(2*top), fconcurrency(4*top))
}

// zeroThroughput: valid levels with no output left out of the fits (zero lists their
// concurrencies); remain is the number of levels the fits keep.
func zeroThroughput(zero []string, remain int) warning {
	w := newWarning(warnZeroThroughput, "", "throughput fits: the valid level(s) at concurrency %s with 0 output tokens/s are left out of the %s, %s and %s fits and the knee (the models need positive throughput)",
		strings.Join(zero, ", "), MethodUSL.Label(), MethodBatch.Label(), MethodHinge.Label())
	if remain < MinFitLevels {
		w.text += fmt.Sprintf("; %d level(s) remain, too few (< %d): no throughput fits and no knee", remain, MinFitLevels)
	}
	return w
}

// fitFailed: the throughput model m could not be fitted.
func fitFailed(m Method, err error) warning {
	return newWarning(warnFitFailed, string(m), "%s: %v", m, err)
}

func uslNoPeak(kappa Float) warning {
	return newWarning(warnUSLNoPeak, "", "%s: κ = %.3g: the fitted curve has no peak (no coherency delay)", MethodUSL, float64(kappa))
}

func kneedleNone() warning {
	return newWarning(warnKneedleNone, "", "%s: no knee found on the throughput curve", MethodKneedle)
}

// kneedleEdge: the only knee Kneedle finds is the first level, at concurrency first.
func kneedleEdge(first float64) warning {
	return newWarning(warnKneedleEdge, "", "%s: no knee: the only knee %s finds is the first level (concurrency %g), an edge artefact",
		MethodKneedle, MethodKneedle.Label(), first)
}

func noKneeModel() warning {
	return newWarning(warnNoKneeModel, "", "no knee: none of the %s, %s and %s models could be fitted. Next: sweep levels that show the rise and the plateau, several doublings apart (e.g. --levels 1,2,4,8,16,32,64,128)",
		MethodUSL.Label(), MethodBatch.Label(), MethodHinge.Label())
}

// kneeSpan: the valid levels from lo to hi span less than one doubling, so there is no
// marginal-gain point; what names it ("knee" when it would be the headline, else "efficient
// point").
func kneeSpan(what string, lo, hi float64) warning {
	return newWarning(warnKneeSpan, "", "no %s: the valid levels span less than one doubling (%g to %g). Next: sweep levels several doublings apart (--levels 1,2,4,8,…)", what, lo, hi)
}

// kneeBeyond: throughput still grows growPct per doubling at the largest valid level top, so
// there is no marginal-gain point (what names it, as for kneeSpan).
func kneeBeyond(what string, growPct, top, gain float64) warning {
	return newWarning(warnKneeBeyond, "", "no %s: throughput still grows %.0f%% per doubling at concurrency %g (the largest valid level, knee_gain %.0f%%). Next: extend the sweep past %g (%s)",
		what, growPct, top, gain*100, top, beyond(top))
}

// kneeAtBottom: one doubling from the smallest valid level lo already adds less than gain
// (what names the marginal-gain point, as for kneeSpan).
func kneeAtBottom(what string, lo, gain float64) warning {
	next := fmt.Sprintf("measure lower concurrencies (add %s to --levels)", lowerLevels(lo))
	if lo <= 1 {
		next = "none: one request at a time already takes the server's throughput (it does not batch)"
	}
	return newWarning(warnKneeAtBottom, "", "%s at or below the smallest valid level (concurrency %g): one doubling already adds < %.0f%%. Next: %s",
		what, lo, gain*100, next)
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
		n, n-fitParams, fitParams, MinIntervalLevels)
}

// bootstrapFewValues: only got of b resamples gave a value of what (the knee, the efficient
// point; "" when the refits themselves failed).
func bootstrapFewValues(what string, got, b int) warning {
	if what == "" {
		return newWarning(warnBootstrapFewValues, what, "bootstrap: only %d of %d resamples gave a value: no interval", got, b)
	}
	return newWarning(warnBootstrapFewValues, what, "bootstrap: only %d of %d resamples gave a value of the %s: no interval", got, b, what)
}

func blowupNoTTFT() warning {
	return newWarning(warnBlowupNoTTFT, "", "no TTFT blow-up: no valid level has a TTFT p50. Next: see why the levels were excluded (the warnings above)")
}

// blowupOneLevel: only the level at concurrency c has a TTFT p50.
func blowupOneLevel(c float64) warning {
	return newWarning(warnBlowupOneLevel, "", "no TTFT blow-up: only one valid level (concurrency %g) has a TTFT p50: nothing to compare it with. Next: sweep more levels (--levels 1,2,4,…)", c)
}

// blowupNone: TTFT (its statistic stat; "" is p50) stays within BlowupFactor of the first
// level's baseMS up to top.
func blowupNone(stat string, baseMS, top float64) warning {
	if stat == "" {
		stat = "p50"
	}
	return newWarning(warnBlowupNone, "", "no TTFT blow-up: TTFT %s stays within %gx of the first level's %.0f ms up to concurrency %g. Next: extend the sweep past %g (%s): queueing past saturation blows TTFT up",
		stat, BlowupFactor, baseMS, top, top, beyond(top))
}

// blowupUnsupported: TTFT (its statistic stat; "" is p50) rose from firstMS to lastMS up to
// concurrency top, but not on a ramp the levels support (DESIGN §4.4).
func blowupUnsupported(stat string, firstMS, lastMS, top float64) warning {
	if stat == "" {
		stat = "p50"
	}
	return newWarning(warnBlowupUnsupported, "", "no TTFT blow-up claimed: TTFT %s rises from %.3g ms to %.3g ms (%.1fx) up to concurrency %g, short of a blow-up (at least %d levels past it and a %gx rise over the flat part). Next: extend the sweep past %g (%s) to see whether it keeps rising",
		stat, firstMS, lastMS, lastMS/firstMS, top, BlowupMinPast, BlowupMinRise, top, beyond(top))
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
// 1 − OverloadDrop of it from concurrency from.
func overloadDetected(dropPct, peakTPS, peakC, from float64) warning {
	return newWarning(warnOverload, "", "overload: throughput falls %.0f%% past its peak of %.0f tokens/s at concurrency %g (below %.0f%% of the peak from concurrency %g)",
		dropPct, peakTPS, peakC, (1-OverloadDrop)*100, from)
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

func noOperatingPoint() warning {
	return newWarning(warnNoOperatingPoint, "", "no operating point: no valid level has a mean or median E2E")
}

func operatingMedian() warning {
	return newWarning(warnOperatingMedian, "", "operating point: mean E2E missing for some levels; E2E p50 used in its place")
}

// operatingBeyond: power still rises at the largest valid level last.
func operatingBeyond(last float64) warning {
	return newWarning(warnOperatingBeyond, "", "operating point: power (output TPS ÷ mean E2E) still rises at the largest valid level (concurrency %g): the maximum lies beyond the measured range; extend the sweep", last)
}

// sloUnreported: the SLO name is set but no valid level reports its metric.
func sloUnreported(name string) warning {
	return newWarning(warnSLOUnreported, name, "slo: %s is set but no valid level reports it: ignored", name)
}

// sloHigherPercentile: the SLO name is set but no valid level reports its percentile, so it
// is checked at the higher percentile as (stricter).
func sloHigherPercentile(name, as string) warning {
	return newWarning(warnSLOHigherPercentile, name, "slo: %s is set but no valid level reports it: checked against %s instead (stricter; the input reports no %s)", name, as, name)
}

func sloUnset() warning {
	return newWarning(warnSLOUnset, "", "slo: no usable SLO: no SLO point. Next: set one (slo.ttft_p95, tpot_p95, e2e_p95 or another metric_pNN in the configuration, or --slo ttft:p99:2s)")
}

func sloNoLevel() warning {
	return newWarning(warnSLONoLevel, "", "slo: no valid level to check the SLOs against: no SLO point. Next: see why the levels were excluded (the warnings above)")
}

func sloNoMetric() warning {
	return newWarning(warnSLONoMetric, "", "slo: no valid level reports a latency the SLOs are set on: no SLO point. Next: set an SLO on a latency the levels report (--slo ttft:p99:2s)")
}

// sloOtherGoodput: the level at concurrency c meets every SLO but only sharePct of its
// requests count as goodput.
func sloOtherGoodput(c, sharePct float64) warning {
	return newWarning(warnSLOOtherGoodput, fmt.Sprint(c), "slo: level %g meets every SLO at p95 but only %.0f%% of its requests count as goodput: its goodput was counted under other SLOs (a level-summary CSV written under different ones?); goodput at the SLO point is left null",
		c, sharePct)
}

// sloBeyond: every valid level, up to last, meets the SLOs.
func sloBeyond(last float64) warning {
	return newWarning(warnSLOBeyond, "", "slo: every valid level meets the SLOs: the limit lies beyond concurrency %g. Next: extend the sweep past %g (%s) to find it", last, last, beyond(last))
}

// sloFirstMisses: the first valid level, at concurrency first, misses the SLO limit.
func sloFirstMisses(first float64, limit string) warning {
	next := fmt.Sprintf("measure below concurrency %g (add %s to --levels)", first, lowerLevels(first))
	if first <= 1 {
		next = "this server misses the SLO with one request at a time: relax the SLO or change the deployment"
	}
	return newWarning(warnSLOFirstMisses, "", "slo: even the first valid level (concurrency %g) misses %s: no SLO point. Next: %s", first, limit, next)
}

// sloCappedByExcluded: an excluded level at concurrency at measured a breach (evidence) below
// the first valid level that misses the SLOs: the SLO point lies between the last valid level
// meeting them, last, and at.
func sloCappedByExcluded(last, at float64, evidence string) warning {
	return newWarning(warnSLOCapped, "", "slo: the SLO point lies between concurrency %g, the largest valid level meeting the SLOs, and %g: %s; the replica plan sizes at %g. Next: rerun concurrency %g (--levels %g) to measure it valid and place the limit between",
		last, at, evidence, last, at, at)
}

// sloExcludedBelow: an excluded level at concurrency at measured a breach (evidence) below
// every valid level.
func sloExcludedBelow(at float64, evidence string) warning {
	return newWarning(warnSLOExcludedBelow, "", "slo: no SLO point: %s, below every valid level that meets the SLOs. Next: measure lower concurrencies (--levels)", evidence)
}

// sloBreachContradicted: an excluded level at concurrency at breached name, but the valid
// level at above meets every SLO: the breach is not used.
func sloBreachContradicted(at float64, name string, above float64) warning {
	return newWarning(warnSLOBreachContradicted, fmt.Sprint(at), "slo: excluded level concurrency %g breached %s, but valid level %g above it meets every SLO: the breach is not used to bound the SLO point",
		at, name, above)
}

// sloClientEffect: the SLO's number name at the level at concurrency c may have been moved
// by the client by the fraction e, above the tolerance.
func sloClientEffect(c float64, name string, e, tolerance float64) warning {
	return newWarning(warnSLOClientEffect, fmt.Sprintf("%g %s", c, name), "slo: at concurrency %g the client's lateness may have moved %s by %.1f%% (> tolerance %.1f%%): the SLO point is that uncertain there. Next: a machine of its own for kneecap, or an SLO on p95",
		c, name, 100*e, 100*tolerance)
}

// sloThinLevel: the imprecise level at concurrency c has ok successful requests, fewer than
// the need of the SLOs' percentiles: it takes no part in the SLO point.
func sloThinLevel(c float64, ok, need int) warning {
	return newWarning(warnSLOThinLevel, fmt.Sprint(c), "slo: level concurrency %g, kept though imprecise, has %d successful requests, fewer than the %d its SLO percentiles need: it takes no part in the SLO point. Next: a longer --max-duration",
		c, ok, need)
}

func sloGoodputUnknown() warning {
	return newWarning(warnSLOGoodputUnknown, "", "slo: goodput at the SLO point unknown: the levels carry no goodput_qps")
}

func capacityNoTarget() warning {
	return newWarning(warnCapacityNoTarget, "", "capacity: a replica cost is set but no target load (concurrent_users, qps or output_tps): no plan")
}

func capacityNoSLO() warning {
	return newWarning(warnCapacityNoSLO, "", "capacity: no SLO point: replicas at the SLO are unknown (the slo warning says what would find it)")
}

func capacityNoKnee() warning {
	return newWarning(warnCapacityNoKnee, "", "capacity: no knee: replicas at the knee are unknown (the knee warnings say what would find it)")
}

// lowerLevels suggests the levels below lo to measure: its half and quarter, at least 1.
func lowerLevels(lo float64) string {
	a, b := math.Max(1, math.Floor(lo/4)), math.Max(1, math.Floor(lo/2))
	if a == b {
		return fconcurrency(a)
	}
	return fconcurrency(a) + " and " + fconcurrency(b)
}

// capacityPastBreach: the replicas at what run each replica at concurrency c, past the SLO
// breach measured at concurrency at.
func capacityPastBreach(what string, c, at float64) warning {
	return newWarning(warnCapacityPastBreach, what, "capacity: the replicas at %s run each replica at concurrency %s, past the SLO breach measured at %g: they serve the load at full throughput but miss the SLO; size by replicas_at_slo for the SLO",
		what, fconcurrency(c), at)
}

// gateOtherSLOs: the run labelled run was analyzed under the SLOs runSLOs, the baseline
// labelled base under baseSLOs (see sloKey).
func gateOtherSLOs(run, base, runSLOs, baseSLOs string) warning {
	return newWarning(warnGateOtherSLOs, run, "%s was analyzed under other SLOs than %s (%s vs %s): its SLO figures do not compare; re-run kneecap analyze with the same --slo flags",
		run, base, runSLOs, baseSLOs)
}

// promptLengthOff: the server counted the prompts of levels more than MaxLengthOff from the
// length requested.
func promptLengthOff(levels []*Level) warning {
	return newWarning(warnPromptLengthOff, "", "prompt length: the server counted prompts more than %.0f%% off the length requested at %s: its tokenizer or chat template counts them otherwise, so those levels measured another workload than the one asked for",
		MaxLengthOff*100, lengthsAt(levels, func(l *Level) TokenLengths { return l.InputTokens }))
}

// outputLengthIgnored: with fixed_output, the outputs of levels were more than MaxLengthOff
// from the max_tokens requested with ignore_eos and min_tokens.
func outputLengthIgnored(levels []*Level) warning {
	return newWarning(warnOutputLengthIgnored, "", "output length: fixed_output asked for exactly max_tokens (with ignore_eos and min_tokens), but the outputs were more than %.0f%% off it at %s: the server ignores those parameters (an OpenAI-style API, Ollama), so outputs end where the model stops and those levels measured another workload than the one asked for",
		MaxLengthOff*100, lengthsAt(levels, func(l *Level) TokenLengths { return l.OutputTokens }))
}

// lengthsAt lists each level's concurrency and its length distribution against the request:
// "concurrency 1 (mean 247, p50 247, p95 251 vs 64 requested), 2 (…)" (levelsAt).
func lengthsAt(levels []*Level, of func(*Level) TokenLengths) string {
	return levelsAt(levels, func(l *Level) string {
		t := of(l)
		return fmt.Sprintf("mean %s, p50 %s, p95 %s vs %s requested", FormatTokens(t.Mean), FormatTokens(t.P50), FormatTokens(t.P95), FormatTokens(t.Requested))
	})
}

// levelsAt names levels with detail(l) each, as the warnings that name several do:
// "concurrency 1 (…), 2 (…)", or on an arrival-rate run "10 requests/s (…), 20 requests/s
// (…)".
func levelsAt(levels []*Level, detail func(*Level) string) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		if l.IsRate() {
			parts[i] = fmt.Sprintf("%s requests/s (%s)", l.OfferedRPS.Format(), detail(l))
		} else {
			parts[i] = fmt.Sprintf("%d (%s)", l.Concurrency, detail(l))
		}
	}
	out := strings.Join(parts, ", ")
	if len(levels) > 0 && !levels[0].IsRate() {
		out = "concurrency " + out
	}
	return out
}

// serverLimitDisagree: the estimate named what (the batch-model slot limit, the headline
// knee) at v is more than MaxLimitOff from the server's limit lim.
func serverLimitDisagree(what string, v float64, lim *ServerLimit) warning {
	l := float64(lim.Slots)
	why := "the server runs no more than that at once, so throughput growing past it is not more requests decoded together: the fit does not describe this server"
	if v < l {
		why = "throughput stops growing before the server's slots are full: another resource binds first (compute, memory bandwidth, the KV cache, a prefill budget)"
	}
	return newWarning(warnServerLimit, what, "server evidence: the %s at concurrency %.3g is %.0f%% %s the server's limit of %s requests at once (%s), more than %.0f%% apart: %s",
		what, v, math.Abs(v/l-1)*100, map[bool]string{true: "below", false: "above"}[v < l], fconcurrency(l), lim.Describe(), MaxLimitOff*100, why)
}

// fconcurrency formats a count of requests: 4, 4.5.
func fconcurrency(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// usageDisbelieved: at each of levels, the usage the server reported was not believed for
// some of the requests sent in the window (DESIGN §7); one warning names them all.
func usageDisbelieved(levels []*Level) warning {
	at := levelsAt(levels, func(l *Level) string { return fmt.Sprintf("%d of %d requests", l.UsageDisbelieved, l.Requests) })
	return newWarning(warnUsageDisbelieved, "", "usage: the usage the server reported was not believed at %s (a count no server could send for the stream that arrived): an output count not believed is replaced by the content chunks, and the level's TPS counts them; a prompt count not believed is left out of the counted input lengths (input TPS counts the requested length); the levels' notes and tokens_note in records.jsonl say why",
		at)
}

// warnings collects the warnings of one analysis in order.
type warnings struct {
	list []warning
}

// add appends w.
func (ws *warnings) add(w warning) { ws.list = append(ws.list, w) }

// addOnce appends w unless a warning of its kind and subject is already there.
func (ws *warnings) addOnce(w warning) {
	for _, o := range ws.list {
		if o.kind == w.kind && o.subject == w.subject {
			return
		}
	}
	ws.add(w)
}

// texts returns the warnings' texts, never nil.
func (ws *warnings) texts() []string {
	out := make([]string, 0, len(ws.list))
	for _, w := range ws.list {
		out = append(out, w.text)
	}
	return out
}
