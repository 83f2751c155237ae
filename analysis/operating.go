package analysis

// operatingPoint is the valid level of highest power, output TPS ÷ mean E2E in seconds (E2E
// p50 where a table has no mean), DESIGN §4.6; it warns when that is the largest level (the
// best may lie beyond) or when none has an E2E.
func (a *analyzer) operatingPoint() {
	var best *OperatingPoint
	median := false
	// n counts the levels with a power, last is the largest of their concurrencies.
	n, last := 0, 0.0
	for _, p := range a.pts {
		e := float64(p.lv.E2E.Mean)
		if !finite(e) {
			// Imported tables may carry only the median.
			e, median = float64(p.lv.E2E.P50), true
		}
		if !finite(e) || e <= 0 {
			continue
		}
		power := p.tps / (e / 1e3)
		n, last = n+1, p.x
		if best == nil || power > float64(best.Power) {
			best = &OperatingPoint{Concurrency: Float(p.x), TPS: Float(p.tps), Power: Float(power)}
		}
	}
	if best == nil && len(a.pts) > 0 {
		a.warn(fixed(warnNoOperatingPoint))
	} else if best != nil && median {
		a.warn(fixed(warnOperatingMedian))
	}
	if best != nil && n > 1 && float64(best.Concurrency) == last {
		a.warn(operatingBeyond(last))
	}
	a.res.OperatingPoint = best
}
