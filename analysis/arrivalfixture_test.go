package analysis_test

import (
	"math"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestRateFixtureIsAnalyzed keeps the hand-made arrival-rate fixture honest: analyzing its
// levels under its SLO and plan gives its answers (within the rounding of the fixture).
func TestRateFixtureIsAnalyzed(t *testing.T) {
	fx := analysistest.Rate()
	opts := analysis.DefaultOptions()
	opts.SLO = analysis.SLO{TTFTP95: 500 * time.Millisecond, TPOTP95: 50 * time.Millisecond}
	opts.Plan = analysis.Plan{QPS: 200, ReplicaCostPerHour: 4}
	got := analysis.Analyze(fx.Levels, fx.Meta, opts)
	want, r := fx.Rate, got.Rate
	for _, c := range []struct {
		name      string
		got, want analysis.Float
		tol       float64
	}{
		{"capacity_rps", r.CapacityRPS, want.CapacityRPS, 0.005},
		{"capacity_interval low", r.CapacityInterval[0], want.CapacityInterval[0], 0.01},
		{"capacity_interval high", r.CapacityInterval[1], want.CapacityInterval[1], 0.01},
		{"capacity_tps", r.CapacityTPS, want.CapacityTPS, 0.005},
		{"ttft_blowup_rps", r.TTFTBlowupRPS, want.TTFTBlowupRPS, 0.01},
		{"slo_rps", r.SLORPS, want.SLORPS, 0.01},
		{"slo_tps", r.SLOTPS, want.SLOTPS, 0.01},
		{"slo_goodput_rps", r.SLOGoodputRPS, want.SLOGoodputRPS, 0.01},
		{"replicas_at_slo", got.Capacity.ReplicasAtSLO, fx.Capacity.ReplicasAtSLO, 0},
		{"replicas_at_capacity", got.Capacity.ReplicasAtCapacity, fx.Capacity.ReplicasAtCapacity, 0},
		{"cost_per_m_output_tokens", got.Capacity.CostPerMTokens, fx.Capacity.CostPerMTokens, 0.01},
	} {
		if math.Abs(float64(c.got)/float64(c.want)-1) > c.tol || !c.got.OK() {
			t.Errorf("%s = %v, fixture %v (± %g)", c.name, c.got, c.want, c.tol)
		}
	}
	if got.SLO.Limit != fx.SLO.Limit || r.CapacityBound != want.CapacityBound || len(got.Warnings) != len(fx.Warnings) {
		t.Errorf("limit %q bound %q warnings %q; fixture %q %q %q", got.SLO.Limit, r.CapacityBound, got.Warnings, fx.SLO.Limit, want.CapacityBound, fx.Warnings)
	}
}
