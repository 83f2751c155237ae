package analysis

// rateGateMetrics are the figures Gate checks for an arrival-rate baseline, in order.
var rateGateMetrics = []string{"max_tps", "capacity_rps", "capacity_tps", "slo_rps", "slo_tps", "slo_goodput_rps", "ttft_blowup_rps"}

// rateGateFigures reads an arrival-rate result's headline figures as Gate does the closed
// loop's: no valid level is 0 for each (the SLO figures unknown when no SLO was checked); a
// capacity every level sustained (at_least) is a lower bound, as are the SLO figures when
// every level met the SLOs and no TTFT blow-up within the rates run (≥ the largest valid
// rate, with two valid levels or more); an SLO missed from the first level is 0. A result
// without a rate answer (a closed-loop one) has every figure unknown.
func rateGateFigures(r *Result) map[string]gateFigure {
	f := map[string]gateFigure{}
	rr := r.Rate
	if rr == nil {
		for _, m := range rateGateMetrics {
			f[m] = gateFigure{v: NaN()}
		}
		return f
	}
	valid, top := 0, 0.0
	for i := range r.Levels {
		if l := &r.Levels[i]; l.Valid && l.IsRate() {
			valid++
			top = max(top, float64(l.OfferedRPS))
		}
	}
	slos := []string{"slo_rps", "slo_tps", "slo_goodput_rps"}
	if valid == 0 {
		for _, m := range rateGateMetrics {
			f[m] = gateFigure{v: 0, note: "no valid level"}
		}
		if !sloChecked(r) {
			for _, m := range slos {
				f[m] = gateFigure{v: NaN()}
			}
		}
		return f
	}
	bound := func(v Float, why string) gateFigure { return gateFigure{v: v, atLeast: true, note: why} }
	f["max_tps"] = gateFigure{v: r.Throughput.MaxTPS}
	if rr.CapacityBound == "at_least" {
		why := "every valid level sustained its rate"
		f["capacity_rps"], f["capacity_tps"] = bound(rr.CapacityRPS, why), bound(rr.CapacityTPS, why)
	} else {
		f["capacity_rps"], f["capacity_tps"] = gateFigure{v: rr.CapacityRPS}, gateFigure{v: rr.CapacityTPS}
	}
	switch {
	case rr.TTFTBlowupRPS.OK():
		f["ttft_blowup_rps"] = gateFigure{v: rr.TTFTBlowupRPS}
	case valid >= 2:
		f["ttft_blowup_rps"] = bound(Float(top), "no TTFT blow-up within the rates run")
	default:
		f["ttft_blowup_rps"] = gateFigure{v: NaN()}
	}
	switch {
	case !sloChecked(r) && !rr.SLORPS.OK():
		for _, m := range slos {
			f[m] = gateFigure{v: NaN()}
		}
	case !rr.SLORPS.OK():
		for _, m := range slos {
			f[m] = gateFigure{v: 0, note: "the first valid level misses the SLO"}
		}
	case r.SLO.Limit == "":
		why := "every valid level meets the SLOs"
		f["slo_rps"], f["slo_tps"], f["slo_goodput_rps"] = bound(rr.SLORPS, why), bound(rr.SLOTPS, why), bound(rr.SLOGoodputRPS, why)
	default:
		f["slo_rps"], f["slo_tps"], f["slo_goodput_rps"] = gateFigure{v: rr.SLORPS}, gateFigure{v: rr.SLOTPS}, gateFigure{v: rr.SLOGoodputRPS}
	}
	return f
}
