package analysis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// gateResult is a result with the figures Gate reads: max TPS, knee (N, TPS), SLO point
// (N, TPS, goodput; limit "" makes it a lower bound) and TTFT blow-up N.
func gateResult(maxTPS, kneeN, kneeTPS, sloN, sloTPS, goodput, blowN float64, sloBound bool) *Result {
	r := &Result{
		Throughput: Throughput{MaxTPS: Float(maxTPS)},
		Knee:       &Knee{Concurrency: Float(kneeN), TPS: Float(kneeTPS)},
		TTFTBlowup: &Blowup{Concurrency: Float(blowN)},
		SLO:        SLOResult{MaxConcurrency: Float(sloN), TPS: Float(sloTPS), GoodputQPS: Float(goodput), Limit: "ttft_p95"},
	}
	if sloBound {
		r.SLO.Limit = ""
	}
	r.SLO.Checked = []string{"ttft_p95"}
	for c := 1; c <= 128; c *= 2 {
		r.Levels = append(r.Levels, Level{Concurrency: c, Valid: true})
	}
	return r
}

func verdicts(checks []GateCheck) map[string]string {
	m := map[string]string{}
	for _, c := range checks {
		m[c.Metric] = c.Verdict
	}
	return m
}

func TestGate(t *testing.T) {
	base := gateResult(2400, 24, 2200, 100, 2400, 38, 31, false)
	t.Run("within the allowed drop", func(t *testing.T) {
		// Every figure 9% lower: within 10%; 2400 → 2184 is a change of −0.09.
		run := gateResult(2184, 21.84, 2002, 91, 2184, 34.58, 28.21, false)
		checks := Gate(base, run, 0.10)
		for _, c := range checks {
			if c.Verdict != gateOK {
				t.Errorf("%s: %s (%s), want ok", c.Metric, c.Verdict, c.Why)
			}
		}
		if c := checks[0]; c.Metric != "max_tps" || math.Abs(float64(c.Change)+0.09) > 1e-12 {
			t.Errorf("first check %+v, want max_tps with change −0.09", c)
		}
	})
	t.Run("one figure past it", func(t *testing.T) {
		// Only the SLO point falls by 11%: 100 → 89.
		run := gateResult(2400, 24, 2200, 89, 2400, 38, 31, false)
		v := verdicts(Gate(base, run, 0.10))
		for m, want := range map[string]string{"slo_concurrency": GateRegressed, "max_tps": gateOK, "knee_concurrency": gateOK, "slo_tps": gateOK} {
			if v[m] != want {
				t.Errorf("%s: %s, want %s", m, v[m], want)
			}
		}
		if len(v) != 7 {
			t.Errorf("%d checks, want 7", len(v))
		}
	})
	t.Run("improvement", func(t *testing.T) {
		run := gateResult(3000, 40, 2900, 200, 3000, 60, 50, false)
		for _, c := range Gate(base, run, 0.10) {
			if c.Verdict != gateOK || !(c.Change > 0) {
				t.Errorf("%s: %s, change %v; want ok and positive", c.Metric, c.Verdict, c.Change)
			}
		}
	})
	t.Run("lower bounds", func(t *testing.T) {
		// The run meets the SLOs at every level up to 64: "≥ 64" is below the floor 90 of an
		// exact 100, so nothing is known; "≥ 128" is above it, so it holds.
		v := verdicts(Gate(base, gateResult(2400, 24, 2200, 64, 2400, 38, 31, true), 0.10))
		if v["slo_concurrency"] != gateUnknown {
			t.Errorf("run ≥ 64 vs 100: %s, want unknown", v["slo_concurrency"])
		}
		v = verdicts(Gate(base, gateResult(2400, 24, 2200, 128, 2400, 38, 31, true), 0.10))
		if v["slo_concurrency"] != gateOK {
			t.Errorf("run ≥ 128 vs 100: %s, want ok", v["slo_concurrency"])
		}
		// An SLO point capped by an excluded level's breach, between 64 and 128 (DESIGN §4.7):
		// at least 64 is below the floor 90, nothing is known (not a 36% regression).
		capped := gateResult(2400, 24, 2200, 64, 2400, 38, 31, false)
		capped.SLO.Bound, capped.SLO.Bracket = "between", []Float{64, 128}
		if v := verdicts(Gate(base, capped, 0.10)); v["slo_concurrency"] != gateUnknown {
			t.Errorf("run between 64 and 128 vs 100: %s, want unknown", v["slo_concurrency"])
		}
		// A baseline "≥ 100" held at least 100: a run at 80 has regressed, one at 95 may have.
		bb := gateResult(2400, 24, 2200, 100, 2400, 38, 31, true)
		if v := verdicts(Gate(bb, gateResult(2400, 24, 2200, 80, 2400, 38, 31, false), 0.10)); v["slo_concurrency"] != GateRegressed {
			t.Errorf("run 80 vs baseline ≥ 100: %s, want regressed", v["slo_concurrency"])
		}
		if v := verdicts(Gate(bb, gateResult(2400, 24, 2200, 95, 2400, 38, 31, false), 0.10)); v["slo_concurrency"] != gateUnknown {
			t.Errorf("run 95 vs baseline ≥ 100: %s, want unknown", v["slo_concurrency"])
		}
	})
	t.Run("missing figures", func(t *testing.T) {
		// No knee and no blow-up over 8 valid levels: none within 1…128, lower bounds ≥ 128
		// (knee TPS ≥ max TPS 2400) above the baseline's floors: ok.
		run := gateResult(2400, math.NaN(), math.NaN(), 100, 2400, math.NaN(), 31, false)
		run.TTFTBlowup = nil
		checks := Gate(base, run, 0.10)
		v := verdicts(checks)
		for _, m := range []string{"knee_concurrency", "knee_tps", "ttft_blowup_concurrency"} {
			if v[m] != gateOK {
				t.Errorf("%s: %s, want ok (a lower bound above the floor)", m, v[m])
			}
		}
		// A goodput the run did not count stays unknown.
		if v["slo_goodput_qps"] != gateUnknown {
			t.Errorf("goodput not counted: %s, want unknown", v["slo_goodput_qps"])
		}
		// The other way round, the baseline had no knee or blow-up up to 128 and the run has
		// them at 24 and 31: far below the baseline's floor, regressed.
		v = verdicts(Gate(run, base, 0.10))
		for _, m := range []string{"knee_concurrency", "ttft_blowup_concurrency"} {
			if v[m] != GateRegressed {
				t.Errorf("a new %s below the baseline's bound: %s, want regressed", m, v[m])
			}
		}
	})
	t.Run("dead run", func(t *testing.T) {
		// Every level invalid: every figure is 0 and regresses (the SLO was not checked: unknown).
		dead := gateResult(math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), false)
		dead.Knee, dead.TTFTBlowup, dead.SLO = nil, nil, SLOResult{MaxConcurrency: NaN(), TPS: NaN(), GoodputQPS: NaN()}
		for i := range dead.Levels {
			dead.Levels[i].Valid = false
		}
		v := verdicts(Gate(base, dead, 0.10))
		for _, m := range []string{"max_tps", "knee_concurrency", "knee_tps", "ttft_blowup_concurrency"} {
			if v[m] != GateRegressed {
				t.Errorf("%s: %s, want regressed", m, v[m])
			}
		}
		if v["slo_concurrency"] != gateUnknown {
			t.Errorf("slo_concurrency: %s, want unknown (not checked)", v["slo_concurrency"])
		}
		// The first level already misses the SLO: the SLO point is 0, regressed.
		miss := gateResult(2400, 24, 2200, math.NaN(), math.NaN(), math.NaN(), 31, false)
		if v := verdicts(Gate(base, miss, 0.10)); v["slo_concurrency"] != GateRegressed || v["slo_tps"] != GateRegressed {
			t.Errorf("SLO missed from the first level: %s / %s, want regressed", v["slo_concurrency"], v["slo_tps"])
		}
		// And a baseline that failed entirely makes every figure of a working run ok.
		for _, c := range Gate(dead, base, 0.10) {
			if c.Verdict == GateRegressed {
				t.Errorf("against a dead baseline %s regressed", c.Metric)
			}
		}
	})
}

// CompareGate checks every later run against the first, counts the regressions, warns about
// a run analyzed under other SLOs (the text compare prints and compare.json holds) and
// encodes as compare.json.
func TestCompareGate(t *testing.T) {
	base := gateResult(2400, 24, 2200, 100, 2400, 38, 31, false)
	same := gateResult(2400, 24, 2200, 100, 2400, 38, 31, false)
	worse := gateResult(2000, 24, 2200, 80, 2400, 38, 31, false)
	for _, r := range []*Result{base, same, worse} {
		r.SLO.TTFTP95MS, r.SLO.TPOTP95MS, r.SLO.E2EP95MS = 2000, 50, NaN()
	}
	worse.SLO.TTFTP95MS = 1000
	g := CompareGate([]*Result{base, same, worse}, []string{"h100", "same", "worse"}, 0.05)
	if len(g.Checks) != 2 || len(g.Checks[0]) != len(gateMetrics) {
		t.Fatalf("checks %v, want 2 runs of %d", g.Checks, len(gateMetrics))
	}
	// worse: max TPS 2400 → 2000 and SLO point 100 → 80 fall more than 5%.
	if n := g.Regressions(); n != 2 {
		t.Errorf("%d regressions, want 2", n)
	}
	want := "worse was analyzed under other SLOs than h100 (TTFT p95 1000 ms, TPOT p95 50.0 ms, E2E p95 — ms vs TTFT p95 2000 ms, TPOT p95 50.0 ms, E2E p95 — ms): its SLO figures do not compare; re-run kneecap analyze with the same --slo flags"
	if len(g.Warnings) != 1 || g.Warnings[0] != want {
		t.Errorf("warnings %q, want [%q]", g.Warnings, want)
	}
	j := g.JSON()
	if j.Baseline != "h100" || j.MaxDrop != 0.05 || j.Regressions != 2 || len(j.Runs) != 2 || j.Runs[0].Run != "same" || j.Runs[1].Run != "worse" {
		t.Errorf("JSON %+v", j)
	}
	b, err := json.Marshal(CompareGate([]*Result{base, same}, []string{"a", "b"}, 0.1).JSON())
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.HasPrefix(s, `{"baseline":"a","max_drop":0.1,"regressions":0,"runs":[{"run":"b","checks":[{"metric":"max_tps"`) ||
		!strings.HasSuffix(s, `"warnings":[]}`) {
		t.Errorf("compare.json %s", s)
	}
}
