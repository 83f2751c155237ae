package analysis

import (
	"fmt"
	"math"
	"strings"
)

// Gate verdicts.
const (
	gateOK        = "ok"
	GateRegressed = "regressed"
	gateUnknown   = "unknown"
)

// GateCheck compares one headline figure of a run with a baseline's (higher is better for
// every figure Gate checks).
type GateCheck struct {
	// Metric names the figure: max_tps, knee_concurrency, knee_tps, slo_concurrency,
	// slo_tps, slo_goodput_qps, ttft_blowup_concurrency; for arrival-rate runs max_tps,
	// capacity_rps, capacity_tps, slo_rps, slo_tps, slo_goodput_rps, ttft_blowup_rps.
	Metric string `json:"metric"`
	// Base and Run are the figures; BaseAtLeast and RunAtLeast mark a lower bound (the SLO
	// point "≥ N" when every valid level meets the SLOs).
	Base        Float `json:"base"`
	Run         Float `json:"run"`
	BaseAtLeast bool  `json:"base_at_least,omitempty"`
	RunAtLeast  bool  `json:"run_at_least,omitempty"`
	// Change is (Run − Base) ÷ Base; null when either is unknown.
	Change Float `json:"change"`
	// Verdict is gateOK, GateRegressed or gateUnknown; Why explains an unknown.
	Verdict string `json:"verdict"`
	Why     string `json:"why,omitempty"`
}

// Gate checks run against base, a regression gate for continuous benchmarking: each headline
// figure (maximum TPS, the knee's concurrency and TPS, the SLO point's concurrency, TPS and
// goodput, the TTFT blow-up's concurrency) regresses when it falls more than maxDrop (a
// fraction, such as 0.10) below the baseline's.
//
// A figure a result lacks is read for what its absence means: no valid level is 0 for every
// figure (a dead run fails the gate); no knee with at least minFitLevels valid levels, or no
// TTFT blow-up with two, means none within the levels run, a lower bound "≥ the largest valid
// level" (a knee's TPS then ≥ the maximum TPS); an SLO missed from the first valid level is
// 0; every valid level meeting the SLOs is a lower bound "≥ the largest". A lower bound
// decides only what it can: a run bounded at or above the allowed floor is ok, one bounded
// below it unknown; a run below a bounded baseline's floor has regressed (the baseline held
// at least that much), one above it is unknown. A figure that stays unknown (no SLO set, a
// goodput not counted) is never a regression.
//
// An arrival-rate baseline (Mode record.ModeRate) is gated on its figures instead (rateGateMetrics:
// maximum TPS, capacity in requests/s and tokens/s, the SLO point's rate, TPS and goodput, the
// TTFT blow-up rate), read the same way (DESIGN §4.15).
func Gate(base, run *Result, maxDrop float64) []GateCheck {
	metrics, figures := gateMetrics, gateFigures
	if base.Mode.IsRate() {
		metrics, figures = rateGateMetrics, rateGateFigures
	}
	fb, fr := figures(base), figures(run)
	var out []GateCheck
	for _, m := range metrics {
		b, r := fb[m], fr[m]
		c := GateCheck{Metric: m, Base: b.v, Run: r.v, BaseAtLeast: b.atLeast, RunAtLeast: r.atLeast, Change: NaN(), Verdict: gateUnknown}
		switch {
		case !b.v.OK():
			c.Why = "not computed in the baseline"
		case !r.v.OK():
			c.Why = "not computed in the run"
		case b.v <= 0:
			c.Verdict, c.Why = gateOK, "the baseline had none: "+b.note
		default:
			c.Change = Float((float64(r.v) - float64(b.v)) / float64(b.v))
			floor := float64(b.v) * (1 - maxDrop)
			below := float64(r.v) < floor-1e-9*math.Abs(floor)
			switch {
			case below && !r.atLeast:
				c.Verdict = GateRegressed // also below a bounded baseline, which held at least b
				c.Why = r.note
			case below:
				c.Why = fmt.Sprintf("the run only shows ≥ %s (%s), below the floor %s", r.v.Format(), r.note, Float(floor).Format())
			case b.atLeast:
				c.Why = fmt.Sprintf("the baseline only shows ≥ %s (%s): it may have held more", b.v.Format(), b.note)
			default:
				c.Verdict = gateOK
			}
		}
		out = append(out, c)
	}
	return out
}

// gateMetrics are the figures Gate checks, in order.
var gateMetrics = []string{"max_tps", "knee_concurrency", "knee_tps", "slo_concurrency", "slo_tps", "slo_goodput_qps", "ttft_blowup_concurrency"}

// gateFigure is one figure of a result as Gate reads it; note says what a bound or a zero
// stands for.
type gateFigure struct {
	v       Float
	atLeast bool
	note    string
}

// gateFigures reads a result's headline figures (see Gate).
func gateFigures(r *Result) map[string]gateFigure {
	valid, top := 0, 0
	for _, l := range r.Levels {
		if l.Valid {
			valid++
			top = max(top, l.Concurrency)
		}
	}
	f := map[string]gateFigure{}
	if valid == 0 {
		for _, m := range gateMetrics {
			f[m] = gateFigure{v: 0, note: "no valid level"}
		}
		if !sloChecked(r) {
			for _, m := range []string{"slo_concurrency", "slo_tps", "slo_goodput_qps"} {
				f[m] = gateFigure{v: NaN()}
			}
		}
		return f
	}
	bound := func(v Float, why string) gateFigure { return gateFigure{v: v, atLeast: true, note: why} }
	f["max_tps"] = gateFigure{v: r.Throughput.MaxTPS}
	switch k := r.Knee; {
	case k != nil && k.Concurrency.OK():
		f["knee_concurrency"], f["knee_tps"] = gateFigure{v: k.Concurrency}, gateFigure{v: k.TPS}
	case valid >= minFitLevels:
		f["knee_concurrency"] = bound(Float(top), "no knee within the levels run")
		f["knee_tps"] = bound(r.Throughput.MaxTPS, "no knee within the levels run")
	default:
		f["knee_concurrency"] = gateFigure{v: 0, note: fmt.Sprintf("%d valid levels, too few for a knee", valid)}
		f["knee_tps"] = f["knee_concurrency"]
	}
	switch b := r.TTFTBlowup; {
	case b != nil && b.Concurrency.OK():
		f["ttft_blowup_concurrency"] = gateFigure{v: b.Concurrency}
	case valid >= 2:
		f["ttft_blowup_concurrency"] = bound(Float(top), "no TTFT blow-up within the levels run")
	default:
		f["ttft_blowup_concurrency"] = gateFigure{v: NaN()}
	}
	slo := r.SLO
	switch {
	case !sloChecked(r):
		for _, m := range []string{"slo_concurrency", "slo_tps", "slo_goodput_qps"} {
			f[m] = gateFigure{v: NaN()}
		}
	case !slo.MaxConcurrency.OK():
		for _, m := range []string{"slo_concurrency", "slo_tps", "slo_goodput_qps"} {
			f[m] = gateFigure{v: 0, note: "the first valid level misses the SLO"}
		}
	case slo.Limit == "" || slo.Bound == "between":
		why := "every valid level meets the SLOs"
		if slo.Bound == "between" {
			why = "the SLO point lies between the last valid level meeting it and an excluded level's breach"
		}
		f["slo_concurrency"], f["slo_tps"], f["slo_goodput_qps"] = bound(slo.MaxConcurrency, why), bound(slo.TPS, why), bound(slo.GoodputQPS, why)
	default:
		f["slo_concurrency"], f["slo_tps"], f["slo_goodput_qps"] = gateFigure{v: slo.MaxConcurrency}, gateFigure{v: slo.TPS}, gateFigure{v: slo.GoodputQPS}
	}
	return f
}

// sloChecked reports whether the result's levels were checked against some SLO (a limit was
// found, or every level met them).
func sloChecked(r *Result) bool {
	return len(r.SLO.Checked) > 0 || r.SLO.Limit != "" || r.SLO.MaxConcurrency.OK()
}

// GateReport is the outcome of CompareGate: every later run's checks against the first run,
// the baseline.
type GateReport struct {
	// Labels name the runs; Labels[0] is the baseline's.
	Labels []string
	// MaxDrop is the fall (a fraction) a figure may take before it regresses.
	MaxDrop float64
	// Checks[i] holds Gate of run i+1 against the baseline.
	Checks [][]GateCheck
	// Warnings say why some checks may not compare (runs analyzed under other SLOs).
	Warnings []string
}

// CompareGate checks each of runs[1:] against runs[0] with Gate, allowing a fall of maxDrop
// (a fraction, such as 0.10); labels[i] names runs[i]. SLO points and goodput compare only
// under the same SLOs: a run analyzed under other SLOs than the baseline gets a warning.
// Every run must be non-nil.
func CompareGate(runs []*Result, labels []string, maxDrop float64) GateReport {
	g := GateReport{Labels: labels, MaxDrop: maxDrop}
	if len(runs) == 0 {
		return g
	}
	for _, r := range runs[1:] {
		g.Checks = append(g.Checks, Gate(runs[0], r, maxDrop))
	}
	for i, r := range runs[1:] {
		if base, run := sloKey(runs[0]), sloKey(r); base != run {
			g.Warnings = append(g.Warnings, gateOtherSLOs(g.label(i+1), g.label(0), run, base).text)
		}
	}
	return g
}

// label returns the label of run i, or "run i+1" when labels ran short.
func (g GateReport) label(i int) string {
	if i < len(g.Labels) {
		return g.Labels[i]
	}
	return fmt.Sprintf("run %d", i+1)
}

// sloKey describes the SLOs a run was analyzed under.
func sloKey(r *Result) string {
	key := fmt.Sprintf("TTFT p95 %s ms, TPOT p95 %s ms, E2E p95 %s ms", r.SLO.TTFTP95MS.Format(), r.SLO.TPOTP95MS.Format(), r.SLO.E2EP95MS.Format())
	for _, o := range r.SLO.Objectives {
		if o.Percentile != 95 || o.Metric == "itl" {
			key += fmt.Sprintf(", %s p%d %s ms", strings.ToUpper(o.Metric), o.Percentile, o.MaxMS.Format())
		}
	}
	return key
}

// Regressions counts the regressed checks.
func (g GateReport) Regressions() int {
	n := 0
	for _, cs := range g.Checks {
		for _, c := range cs {
			if c.Verdict == GateRegressed {
				n++
			}
		}
	}
	return n
}

// GateJSON is compare.json: the gate's verdicts for CI.
type GateJSON struct {
	Baseline    string        `json:"baseline"`
	MaxDrop     float64       `json:"max_drop"`
	Regressions int           `json:"regressions"`
	Runs        []GateRunJSON `json:"runs"`
	Warnings    []string      `json:"warnings"`
}

// GateRunJSON is one run's checks in compare.json.
type GateRunJSON struct {
	Run    string      `json:"run"`
	Checks []GateCheck `json:"checks"`
}

// JSON returns the gate as compare.json holds it.
func (g GateReport) JSON() GateJSON {
	out := GateJSON{Baseline: g.label(0), MaxDrop: g.MaxDrop, Regressions: g.Regressions(), Warnings: g.Warnings}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for i, cs := range g.Checks {
		out.Runs = append(out.Runs, GateRunJSON{Run: g.label(i + 1), Checks: cs})
	}
	return out
}

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
