package analysis

import "fmt"

// The warnings of the SLO point, the capacity plan and the regression gate.

// sloUnreported: the SLO name is set but no valid level reports its metric.
func sloUnreported(name string) warning {
	return newWarning(warnSLOUnreported, name, "slo: %s is set but no valid level reports it: ignored", name)
}

// sloHigherPercentile: the SLO name is set but no valid level reports its percentile, so it
// is checked at the higher percentile as (stricter).
func sloHigherPercentile(name, as string) warning {
	return newWarning(warnSLOHigherPercentile, name, "slo: %s is set but no valid level reports it: checked against %s instead (stricter; the input reports no %s)", name, as, name)
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

// sloClientEffect: the SLO's number name at the level at x on the axis ax may have been moved
// by the client by the fraction e, above the tolerance.
func sloClientEffect(ax Axis, x float64, name string, e, tolerance float64) warning {
	at := ax.At(fmt.Sprintf("%g", x))
	if ax.IsRate() {
		at = ax.At(frps(x))
	}
	return newWarning(warnSLOClientEffect, at+" "+name, "slo: at %s the client's lateness may have moved %s by %.1f%% (> tolerance %.1f%%): the SLO point is that uncertain there. Next: a machine of its own for kneecap, or an SLO on p95",
		at, name, 100*e, 100*tolerance)
}

// sloThinLevel: the imprecise level at concurrency c has ok successful requests, fewer than
// the need of the SLOs' percentiles: it takes no part in the SLO point.
func sloThinLevel(c float64, ok, need int) warning {
	return newWarning(warnSLOThinLevel, fmt.Sprint(c), "slo: level concurrency %g, kept though imprecise, has %d successful requests, fewer than the %d its SLO percentiles need: it takes no part in the SLO point. Next: a longer --max-duration",
		c, ok, need)
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
