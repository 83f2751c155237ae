package sweep_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// simTruthOut is the fixed output length of the sim-truth test's requests (max_tokens with
// ignore_eos). The engine is the demo profile's 32 slots with steps five times as long
// (simTruthEngine): its capacity is then IdealTPS(32) ÷ 8 = (32 ÷ (20 ms + 1.25 ms × 32)) ÷ 8
// = 533.3 ÷ 8 = 66.7 requests/s (DESIGN §6, sim.Config.IdealTPS) — few enough arrivals that the
// client keeps its schedule under the race detector on two cores.
const simTruthOut = 8

// simTruthEngine is the sim-truth test's engine: the demo profile with slower steps.
var simTruthEngine = sim.Config{Profile: sim.ProfileDemo, StepBase: 20 * time.Millisecond, StepPerSeq: 1250 * time.Microsecond}

// sweepLevels runs plan against url and returns its levels summarized and analyzed.
func sweepLevels(t *testing.T, url string, plan sweep.Plan, conns int) analysis.Result {
	t.Helper()
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), context.Background(), plan, newClient(t, url, conns), sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != sweep.StopDone {
		t.Fatalf("stop %q", out.StopReason)
	}
	levels := make([]record.Level, len(sink.runs))
	for i := range levels {
		levels[i] = record.Level{Run: sink.runs[i], Records: sink.records[i]}
	}
	opts := analysis.DefaultOptions()
	return analysis.Analyze(analysis.Summarize(levels, opts), analysis.Meta{}, opts)
}

// TestRateSimTruth (issue 14, item 7): a rate sweep of the demo engine over real loopback
// HTTP at 0.5, 0.8, 1.0, 1.3 and 1.6 × its computed capacity finds that capacity within ±7%,
// its interval containing it; the closed-loop maximum QPS of the same engine (concurrency 1,
// 32, 64) agrees with the open-loop capacity within 10%; the level at 1.6 × is unsustainable,
// not invalid, with latencies from the scheduled time above those from the send time; and
// TTFT p50 at 0.5 × is compared with the unloaded TTFT (concurrency 1) — see below.
//
// The engine's steps are five times the demo profile's so that its arrivals (33–107/s) leave
// the client on time under the race detector on two cores: with the demo profile's own steps
// (capacity 167/s at 16 tokens) the race detector slowed the client until the levels past
// capacity came out client-bound. About 35 s with or without it.
func TestRateSimTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("about 35 s")
	}
	t.Parallel() // mostly waits on the slowed engine; a starved client makes it inconclusive, not wrong
	url, cfg := startSim(t, simTruthEngine)
	truth := cfg.IdealTPS(cfg.MaxNumSeqs) / simTruthOut
	proto := sweep.Protocol{Warmup: time.Second, WarmupMax: 10 * time.Second, Duration: 3 * time.Second,
		MaxDuration: 3 * time.Second, MinRequests: 1, CITarget: 0.25, DrainTimeout: 10 * time.Second,
		ClientTolerance: 0.05}
	// client_tolerance 5%: the claims are the capacity within ±7% and the closed loop within
	// 10%. Under -race on two cores the arrivals run 1–2 ms behind their schedule against a
	// 50 ms TTFT (measured: 2.0% on TTFT p95 from the scheduled arrival at 0.5 ×), which the
	// default 1% refuses while it moves no claim here.
	// ci_target 25%: a Poisson level's slice TPS is as noisy as its arrival count; at 83
	// requests/s a 300 ms slice holds 25 arrivals (±20%), a CI half-width of t(0.975, 9) ×
	// 20% ÷ √10 ≈ 14% in expectation.
	fracs := []float64{0.5, 0.8, 1.0, 1.3, 1.6}
	var rates []float64
	for _, f := range fracs {
		rates = append(rates, f*truth)
	}
	w := fixedWorkload{out: simTruthOut}
	open := sweepLevels(t, url, sweep.Plan{Rates: rates, Arrival: sweep.Arrival{Seed: 5}, Protocol: proto, Workload: w}, 1024)
	closedProto := proto
	closedProto.Warmup, closedProto.Duration, closedProto.MaxDuration = 500*time.Millisecond, 2*time.Second, 2*time.Second
	closed := sweepLevels(t, url, sweep.Plan{Levels: []int{1, 32, 64}, Protocol: closedProto, Workload: w}, 64)

	rr := open.Rate
	if rr == nil {
		t.Fatalf("no rate result: mode %q", open.Mode)
	}
	for i, l := range open.Levels {
		t.Logf("%.1f × capacity (%.1f/s): valid %v sustainable %v, qps %.1f, TTFT p50 %.2f ms (from scheduled %.2f), lag p99 %.3f ms, backlog %+.1f/s, notes %q",
			fracs[i], rates[i], l.Valid, l.Sustainable, float64(l.QPS), float64(l.TTFT.P50), float64(l.TTFTScheduled.P50),
			float64(l.ScheduleLag.P99), float64(l.BacklogGrowthRPS), l.Notes)
	}
	c, lo, hi := float64(rr.CapacityRPS), float64(rr.CapacityInterval[0]), float64(rr.CapacityInterval[1])
	t.Logf("capacity %.1f requests/s [%.1f, %.1f], truth %.1f (%s)", c, lo, hi, truth, rr.CapacityReason)
	// The capacity needs a valid level above it; when the client self-check excluded every
	// one (the machine busy with other work, as a 2-core runner under -race can be) the
	// analysis rightly gives only a lower bound: inconclusive here, not wrong.
	// The same holds below it: with every level under capacity client-bound the interval has
	// no lower end.
	starvedAbove, starvedBelow := true, true
	for i, l := range open.Levels {
		if l.Valid || !l.ClientBound {
			if fracs[i] > 1 {
				starvedAbove = false
			} else {
				starvedBelow = false
			}
		}
	}
	if starvedAbove && math.IsNaN(hi) {
		t.Skipf("every level above capacity was client-bound: the capacity %.1f is only a lower bound on this machine", c)
	}
	if starvedBelow && math.IsNaN(lo) {
		t.Skipf("every level up to capacity was client-bound: the capacity %.1f has no lower bound on this machine", c)
	}
	if math.Abs(c/truth-1) > 0.07 {
		t.Errorf("capacity %.1f requests/s, want %.1f ± 7%%", c, truth)
	}
	if !(lo <= truth && truth <= hi) {
		t.Errorf("capacity interval [%.1f, %.1f] does not contain the truth %.1f", lo, hi, truth)
	}
	// Every closed level counts, valid or not: a level the client self-check excluded (the
	// machine busy with other work) cannot show more QPS than the engine gave, and on a busy
	// 2-core machine that check excluded 32 and 64, leaving concurrency 1's 5.5 requests/s.
	maxQPS := 0.0
	for _, l := range closed.Levels {
		maxQPS = max(maxQPS, float64(l.QPS))
	}
	for _, l := range closed.Levels {
		t.Logf("closed loop, concurrency %v: valid %v, qps %.1f, TTFT p50 %.2f ms, notes %q", l.Concurrency, l.Valid, float64(l.QPS), float64(l.TTFT.P50), l.Notes)
	}
	t.Logf("closed loop: max QPS %.1f", maxQPS)
	if math.Abs(maxQPS/c-1) > 0.10 {
		t.Errorf("closed-loop max QPS %.1f and open-loop capacity %.1f differ by more than 10%%", maxQPS, c)
	}
	// The level at 1.6 × must be kept (valid) although unsustainable — unless the client
	// self-check found the load generator late (read lag past its bound: a 2-core runner
	// under -race, 300 streams open), when its validity says nothing about the backlog rule.
	over := open.Levels[len(fracs)-1]
	wantValid := !over.ClientBound
	if !wantValid {
		t.Logf("1.6 × capacity was client-bound on this machine: its validity is not checked")
	}
	if (wantValid && !over.Valid) || over.Sustainable || !(over.TTFTScheduled.P50 > over.TTFT.P50) {
		t.Errorf("1.6 × capacity: valid %v (client-bound %v) sustainable %v, TTFT p50 %v from send, %v from scheduled: want valid unless client-bound, unsustainable, the second larger",
			over.Valid, over.ClientBound, over.Sustainable, over.TTFT.P50, over.TTFTScheduled.P50)
	}
	checkHalfLoadTTFT(t, cfg, rates[0], open.Levels[0], closed.Levels[0])
}

// checkHalfLoadTTFT compares TTFT p50 at 0.5 × capacity with the unloaded TTFT p50 u (the
// closed loop's concurrency 1). On the batching engine TTFT is not flat below capacity: an
// arrival waits for the step in progress to end (for Poisson arrivals the residual is uniform
// over a step: its median half a step) and then takes a step of the running batch b + 1,
// whose time grows with b. The "within 10% of the unloaded TTFT" (measured: 1.8 ×)
// holds for neither the simulator nor the model, so the check is against the model:
// u + (t(b + 1) − t(1)) + t(b) ÷ 2, b the mean batch from Little's law, b = λ·N_out·t(b), so
// b = λ·N·base ÷ (1 − λ·N·perSeq) (at 33.3 requests/s: b = 8.0, t(b) = 30 ms, so u + 25 ms),
// within 15%: the model is first order (the median of a sum taken as the sum of its parts'
// medians and means). Measured: within 1% without the race detector, 9% below it with it.
func checkHalfLoadTTFT(t *testing.T, cfg sim.Config, rps float64, half, alone analysis.Level) {
	t.Helper()
	h, u := float64(half.TTFT.P50), float64(alone.TTFT.P50)
	ln := rps * simTruthOut
	base, per := cfg.StepBase.Seconds()*1e3, cfg.StepPerSeq.Seconds()*1e3 // ms
	b := ln * base / 1e3 / (1 - ln*per/1e3)
	step := func(n float64) float64 { return base + n*per }
	want := u + step(b+1) - step(1) + step(b)/2
	t.Logf("TTFT p50: %.2f ms at 0.5 × capacity, %.2f ms unloaded (ratio %.2f); the model says %.2f ms (mean batch %.1f)", h, u, h/u, want, b)
	if !(u > 0) || math.Abs(h/want-1) > 0.15 {
		t.Errorf("TTFT p50 at 0.5 × capacity %.2f ms, want the model's %.2f ms ± 15%% (unloaded %.2f ms)", h, want, u)
	}
}
