package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestRateStopRule drives the open-loop stop rule with levels of the batching engine
// (capacity 41.67 requests/s for 64-token answers, arrivalsim_test.go), 5 s windows: levels at
// 0.5 and 0.9 × capacity are sustained (TestRateSustainableRule: 0 of 20 seeds fail there),
// those at 1.5 and 2 × are not (20 of 20), so the rule stops after the second of those,
// not the first; max_unsustainable 0 never stops for it; and the closed-loop overload and
// plateau rules, which read a throughput curve, do not fire on the flat completion rate past
// capacity.
func TestRateStopRule(t *testing.T) {
	e := demoEngine()
	truth := e.capacity(64)
	levels := e.sweepRates(demoOpenLoop(5*time.Second, 11), 0.5*truth, 0.9*truth, 1.5*truth, 2*truth)
	rules := StopRules{Rules: record.StopRules{Plateau: true, Overload: true, MaxErrorRate: 0.05, MaxUnsustainable: 2}}
	for n := 1; n <= 3; n++ {
		if why := rules.Decide(levels[:n]); why != "" {
			t.Errorf("after %d levels: stop %q, want none", n, why)
		}
	}
	why := rules.Decide(levels)
	if !strings.HasPrefix(why, "2 levels not sustainable (max_unsustainable 2): 62.5 requests/s offered, ") || !strings.Contains(why, "; 83.3 offered, ") {
		t.Errorf("stop %q, want 2 levels not sustainable at 62.5 and 83.3 requests/s", why)
	}
	rules.Rules.MaxUnsustainable = 0
	if why := rules.Decide(levels); why != "" {
		t.Errorf("max_unsustainable 0: stop %q, want none", why)
	}
}

// TestRateStopTTFT: on a rate level stop_ttft reads TTFT from the scheduled arrival. With a
// client cap of 16 in flight at 1.6 × the capped capacity (TestRateInFlightCap), arrivals wait
// client-side for seconds while TTFT from the send time stays at a few steps (16 slots of
// the 32 busy: ≤ 10 ms a step): a stop_ttft of 1 s stops the sweep, naming the latency and the
// rate.
func TestRateStopTTFT(t *testing.T) {
	e := demoEngine()
	o := demoOpenLoop(5*time.Second, 3)
	o.maxConcurrent = 16
	l := e.sweepRates(o, 1.6*e.cfg.IdealTPS(16)/64)
	rules := StopRules{Rules: record.StopRules{MaxErrorRate: 0.05, StopTTFT: time.Second}}
	why := rules.Decide(l)
	if !strings.HasPrefix(why, "TTFT p95 from the scheduled arrival ") || !strings.HasSuffix(why, " at 50 requests/s is above stop_ttft 1s") {
		t.Errorf("stop %q, want TTFT p95 from the scheduled arrival … at 50 requests/s is above stop_ttft 1s", why)
	}
	if lv := Summarize(l, DefaultOptions())[0]; !(float64(lv.TTFT.P95) < 1000) {
		t.Errorf("TTFT p95 from send %v ms: the test needs it below stop_ttft", lv.TTFT.P95)
	}
}

// TestRefineRate: doubling rates 4 … 64 bracket the batching engine's capacity (41.67
// requests/s) between 32 and 64 (TestRateGeometricPlan); the refiner adds levels inside the
// brackets of the capacity and the SLO limit (TTFT p95 ≤ 500 ms), each strictly inside its
// bracket, until every answer lies within 5% of a level or 4 were added; the capacity then
// stays within 2% of the truth and lies within 5% of an added level (measured, not only
// read between doublings).
func TestRefineRate(t *testing.T) {
	e := demoEngine()
	truth := e.capacity(64)
	o := demoOpenLoop(10*time.Second, 7)
	levels := e.sweepRates(o, 4, 8, 16, 32, 64)
	opts := DefaultOptions()
	opts.SLO = SLO{TTFTP95: 500 * time.Millisecond}
	r := NewRefiner(opts, record.StopRules{MaxErrorRate: 0.05})
	var added []float64
	for len(added) < 4 {
		rps, why := r.Refine(levels)
		if rps == 0 {
			if why != "" {
				t.Fatalf("adding stopped: %s", why)
			}
			break
		}
		if !strings.Contains(why, " requests/s lies between levels ") {
			t.Errorf("why %q", why)
		}
		for _, a := range append(added, 4, 8, 16, 32, 64) {
			if math.Abs(rps/a-1) <= RefineTolerance {
				t.Errorf("added %g within 5%% of a level run, %g", rps, a)
			}
		}
		added = append(added, rps)
		o.rate = rps
		l := e.run(o, len(levels))
		l.Run.Refine = why
		levels = append(levels, l)
	}
	if len(added) == 0 {
		t.Fatal("no level added between 32 and 64")
	}
	res := Analyze(Summarize(levels, opts), Meta{}, opts)
	rr := res.Rate
	if !within(float64(rr.CapacityRPS), truth, 0.02) {
		t.Errorf("capacity %.2f after adding %v, want %.2f ± 2%%", float64(rr.CapacityRPS), added, truth)
	}
	near := false
	for _, a := range added {
		near = near || within(float64(rr.CapacityRPS), a, RefineTolerance)
	}
	if !near {
		t.Errorf("capacity %.2f after adding %v: want within 5%% of an added level", float64(rr.CapacityRPS), added)
	}
	t.Logf("added %v; capacity %.2f in %v, SLO %.2f in %v", added, float64(rr.CapacityRPS), rr.CapacityBracket, float64(rr.SLORPS), rr.SLOBracket)
}

// TestRefineRateStopsOnBreach: an added rate level above max_error_rate stops the adding, as
// on concurrency levels.
func TestRefineRateStopsOnBreach(t *testing.T) {
	e := demoEngine()
	levels := e.sweepRates(demoOpenLoop(5*time.Second, 2), 10, 20)
	last := &levels[1]
	last.Run.Refine = "capacity ≈ …"
	for i := range last.Records {
		last.Records[i].Status, last.Records[i].ErrorClass = record.StatusError, record.ErrHTTP5xx
	}
	rps, why := NewRefiner(DefaultOptions(), record.StopRules{MaxErrorRate: 0.05}).Refine(levels)
	if rps != 0 || why != "added level 20 requests/s had error rate 100.0%, above max_error_rate 5.0%" {
		t.Errorf("Refine = %g, %q", rps, why)
	}
}
