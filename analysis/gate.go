package analysis

import (
	"fmt"
	"math"
)

// Gate verdicts.
const (
	GateOK        = "ok"
	GateRegressed = "regressed"
	GateUnknown   = "unknown"
)

// GateCheck compares one headline figure of a run with a baseline's (higher is better for
// every figure Gate checks).
type GateCheck struct {
	// Metric names the figure: max_tps, knee_concurrency, knee_tps, slo_concurrency,
	// slo_tps, slo_goodput_qps, ttft_blowup_concurrency.
	Metric string `json:"metric"`
	// Base and Run are the figures; BaseAtLeast and RunAtLeast mark a lower bound (the SLO
	// point "≥ N" when every valid level meets the SLOs).
	Base        Float `json:"base"`
	Run         Float `json:"run"`
	BaseAtLeast bool  `json:"base_at_least,omitempty"`
	RunAtLeast  bool  `json:"run_at_least,omitempty"`
	// Change is (Run − Base) ÷ Base; null when either is unknown.
	Change Float `json:"change"`
	// Verdict is GateOK, GateRegressed or GateUnknown; Why explains an unknown.
	Verdict string `json:"verdict"`
	Why     string `json:"why,omitempty"`
}

// Gate checks run against base, a regression gate for continuous benchmarking: each headline
// figure (maximum TPS, the knee's concurrency and TPS, the SLO point's concurrency, TPS and
// goodput, the TTFT blow-up's concurrency) regresses when it falls more than maxDrop (a
// fraction, such as 0.10) below the baseline's. A figure either run could not compute is
// unknown, never a regression. A lower bound ("≥ N") decides only what it can: a run
// bounded at or above the allowed floor is ok, one bounded below it unknown; a run below a
// bounded baseline's floor has regressed (the baseline held at least that much), one above
// it is unknown.
func Gate(base, run *Result, maxDrop float64) []GateCheck {
	type fig struct {
		v       Float
		atLeast bool
	}
	figures := func(r *Result) map[string]fig {
		f := map[string]fig{
			"max_tps":         {v: r.Throughput.MaxTPS},
			"slo_concurrency": {v: r.SLO.MaxConcurrency, atLeast: r.SLO.MaxConcurrency.OK() && r.SLO.Limit == ""},
			"slo_tps":         {v: r.SLO.TPS, atLeast: r.SLO.MaxConcurrency.OK() && r.SLO.Limit == ""},
			"slo_goodput_qps": {v: r.SLO.GoodputQPS, atLeast: r.SLO.MaxConcurrency.OK() && r.SLO.Limit == ""},
		}
		f["knee_concurrency"], f["knee_tps"], f["ttft_blowup_concurrency"] = fig{v: NaN()}, fig{v: NaN()}, fig{v: NaN()}
		if k := r.Knee; k != nil {
			f["knee_concurrency"], f["knee_tps"] = fig{v: k.Concurrency}, fig{v: k.TPS}
		}
		if b := r.TTFTBlowup; b != nil {
			f["ttft_blowup_concurrency"] = fig{v: b.Concurrency}
		}
		return f
	}
	fb, fr := figures(base), figures(run)
	var out []GateCheck
	for _, m := range []string{"max_tps", "knee_concurrency", "knee_tps", "slo_concurrency", "slo_tps", "slo_goodput_qps", "ttft_blowup_concurrency"} {
		b, r := fb[m], fr[m]
		c := GateCheck{Metric: m, Base: b.v, Run: r.v, BaseAtLeast: b.atLeast, RunAtLeast: r.atLeast, Change: NaN(), Verdict: GateUnknown}
		if !b.v.OK() || !r.v.OK() || b.v <= 0 {
			c.Why = "not computed in the baseline"
			if b.v.OK() && b.v > 0 {
				c.Why = "not computed in the run"
			}
			out = append(out, c)
			continue
		}
		c.Change = Float((float64(r.v) - float64(b.v)) / float64(b.v))
		floor := float64(b.v) * (1 - maxDrop)
		below := float64(r.v) < floor-1e-9*math.Abs(floor)
		switch {
		case below && !r.atLeast:
			c.Verdict = GateRegressed // also below a bounded baseline, which held at least b
		case below:
			c.Why = fmt.Sprintf("the run only shows ≥ %s (every valid level met the SLOs), below the floor %s", r.v.Format(), Float(floor).Format())
		case b.atLeast:
			c.Why = fmt.Sprintf("the baseline only shows ≥ %s (every valid level met the SLOs): it may have held more", b.v.Format())
		default:
			c.Verdict = GateOK
		}
		out = append(out, c)
	}
	return out
}
