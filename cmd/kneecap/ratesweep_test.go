package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
)

// simCapacity is the batching simulator's maximum sustainable rate for requests of nIn
// prompt and nOut output tokens (DESIGN §6): with all S slots busy each request costs nOut
// decode steps of t(S) shared by S sequences, nOut ÷ X(S) seconds, plus its prefill, nIn ÷
// prefill_tps, which the engine adds to the step that admits it. Without prefill it is the
// issue's X(S) ÷ N_out.
func simCapacity(c sim.Config, nIn, nOut float64) float64 {
	per := nOut / c.IdealTPS(c.MaxNumSeqs)
	if c.PrefillTPS > 0 {
		per += nIn / c.PrefillTPS
	}
	return 1 / per
}

// TestRateSweep runs an arrival-rate sweep against the simulator over loopback HTTP: S = 8
// slots, t(b) = 8 ms + 2 ms·b, 16 → 16 tokens, so the capacity is 1 ÷ (16 ÷ 333.3 + 16 ÷
// 10⁶) = 20.8 requests/s (simCapacity): slow enough that the client, under -race on two
// shared cores, is not the bottleneck at 2 × (it was, client-bound, at 166 requests/s). Rates 0.5, 2, 3 and 4 × it: the sweep stops after
// the two unsustainable levels (max_unsustainable 2), before 4 ×; the levels at 2 and 3 × (cap
// 4,096 in flight, the default) are sustainable false and valid (an answer, not an invalid level);
// its records keep scheduled and sent times; TTFT from the scheduled arrival exceeds TTFT
// from the send (by the client's schedule lag); the capacity is within ±7% of the truth, its
// interval containing it. ci_target 0.3: TPS slices of Poisson arrivals at 10 requests/s vary
// by ~30% a second, so a 2–4 s window meets no tighter target (the demo's 5% fails such
// levels as not steady).
func TestRateSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("a sweep of three levels")
	}
	c, err := sim.Resolve(sim.Config{MaxNumSeqs: 8, StepBase: 8 * time.Millisecond, StepPerSeq: 2 * time.Millisecond, PrefillTPS: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	truth := simCapacity(c, 16, 16)
	cfgPath := writeTestConfig(t, `name: rate
simulator: {max_num_seqs: 8, step_base: 8ms, step_per_seq: 2ms, prefill_tps: 1000000}
workload:
  input_tokens: {dist: fixed, mean: 16}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  warmup: 300ms
  duration: 1500ms
  min_requests: 10
  max_duration: 3s
  drain_timeout: 1s
  ci_target: 0.3
  retry_excluded: 0 # the test counts levels; retries are TestRetryExcluded's
`)
	rates := []float64{round3(0.5 * truth), round3(2 * truth), round3(3 * truth), round3(4 * truth)}
	list := make([]string, len(rates))
	for i, r := range rates {
		list[i] = strconv.FormatFloat(r, 'g', -1, 64)
	}
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "--rates", strings.Join(list, ","), "-o", dir}); err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", err, stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 3 || !strings.HasPrefix(res.StopReason, "2 levels not sustainable (max_unsustainable 2)") {
		t.Errorf("%d levels, stopped %q: want 3, stopped by 2 unsustainable levels", len(res.Levels), res.StopReason)
	}
	over := res.Levels[len(res.Levels)-1]
	if over.Run.OfferedRPS != rates[2] || over.Run.Concurrency != 4096 {
		t.Errorf("last level offered %g at cap %d, want %g at 4096", over.Run.OfferedRPS, over.Run.Concurrency, rates[2])
	}
	for _, r := range over.Records {
		if r.Scheduled == 0 || r.Sent == 0 || r.Sent < r.Scheduled {
			t.Fatalf("record %d: scheduled %d, sent %d: want both, sent ≥ scheduled", r.Seq, r.Scheduled, r.Sent)
		}
	}
	a := readJSON(t, filepath.Join(dir, "analysis.json"))
	if m, _ := dig(a, "mode"); m != "rate" {
		t.Errorf("mode %v, want rate", m)
	}
	levels, _ := dig(a, "levels")
	ls, _ := levels.([]any)
	if len(ls) != 3 {
		t.Fatalf("analysis.json has %d levels", len(ls))
	}
	l1, l2 := ls[1].(map[string]any), ls[2].(map[string]any)
	// A level the client self-check excluded (the machine busy with other work: a 2-core
	// runner with other packages' tests) is invalid for that reason alone; its
	// sustainability is still judged, and the capacity then needs the other level.
	starved := 0
	for name, l := range map[string]map[string]any{"2 × capacity": l1, "3 × capacity": l2} {
		if l["client_bound"] == true {
			starved++
		}
		if l["sustainable"] != false || l["valid"] != true && l["client_bound"] != true {
			t.Errorf("%s: sustainable %v, valid %v (notes %v): want false, true", name, l["sustainable"], l["valid"], l["notes"])
		}
	}
	if starved == 2 {
		t.Skip("both levels above capacity were client-bound: the capacity is inconclusive on this machine")
	}
	sched, _ := dig(l2, "ttft_scheduled_ms", "p50")
	sent, _ := dig(l2, "ttft_ms", "p50")
	if s, ok := sched.(float64); !ok || !(s > sent.(float64)) {
		t.Errorf("3 × capacity: TTFT p50 from the scheduled arrival %v ms, from the send %v ms: want the first larger", sched, sent)
	}
	checkCapacity(t, a, truth, 0.07)
}

// checkCapacity checks analysis.json's rate.capacity_rps against truth within tol and that
// its interval contains truth.
func checkCapacity(t testing.TB, a map[string]any, truth, tol float64) float64 {
	t.Helper()
	capRPS, _ := dig(a, "rate", "capacity_rps")
	iv, _ := dig(a, "rate", "capacity_interval")
	got, _ := capRPS.(float64)
	if math.Abs(got/truth-1) > tol {
		t.Errorf("capacity %.2f requests/s, want %.2f ± %.0f%%", got, truth, 100*tol)
	}
	b, _ := iv.([]any)
	var lo, hi float64
	if len(b) == 2 {
		lo, _ = b[0].(float64)
		hi, _ = b[1].(float64)
	}
	if !(lo <= truth && truth <= hi) {
		why, _ := dig(a, "rate", "capacity_reason")
		warn, _ := dig(a, "warnings")
		t.Errorf("capacity interval %v does not contain %.2f (%v; warnings %v)", iv, truth, why, warn)
	}
	return got
}

// round3 rounds v to 3 significant figures.
func round3(v float64) float64 {
	p := math.Pow(10, 2-math.Floor(math.Log10(v)))
	return math.Round(v*p) / p
}

// TestRateSweepFixedSlots is the open-loop acceptance, scaled to a few seconds: a rate
// sweep over loopback against the simulator's fixed mode with fixed_slots 8 — a request waits
// FCFS for one of 8 slots, then takes TTFT 50 ms and 15 more tokens at 10 ms: capacity 8 ÷
// (50 ms + 15 × 10 ms) = 40 requests/s (sim.Config.FixedCapacity) — at 0.5, 1.3 and 1.6 × it,
// its waiting count scraped every 200 ms. The capacity within ±10% of 40 with its interval
// containing it, never above the largest completion rate measured (measured 39.6–39.9,
// intervals from 20.6–38.9 to 40.4–41.4: the simulator's timers make its service a little
// slower than 200 ms); every level realised its offered rate within 5% or says how far it fell
// short. The client may be late by 5% of a number (client_tolerance 0.05): under -race it
// sends about 1 ms behind the schedule, 2% of this TTFT of 50 ms from the scheduled arrival,
// which moves no completion; at 1% the level below capacity was client-bound, leaving the
// capacity an upper bound only.
func TestRateSweepFixedSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("a sweep of three levels")
	}
	c, err := sim.Resolve(sim.Config{Profile: sim.ProfileFixed, TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond, FixedSlots: 8})
	if err != nil {
		t.Fatal(err)
	}
	truth := c.FixedCapacity(16)
	cfgPath := writeTestConfig(t, `name: rate-slots
simulator: {profile: fixed, ttft: 50ms, itl: 10ms, fixed_slots: 8}
server_metrics: {interval: 200ms}
workload:
  input_tokens: {dist: fixed, mean: 16}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  warmup: 200ms
  duration: 1s
  min_requests: 10
  max_duration: 2s
  drain_timeout: 300ms
  ci_target: 0.3
  client_tolerance: 0.05
`)
	var list []string
	for _, f := range []float64{0.5, 1.3, 1.6} {
		list = append(list, strconv.FormatFloat(round3(f*truth), 'g', -1, 64))
	}
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "--rates", strings.Join(list, ","), "-o", dir}); err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", err, stderr)
	}
	a := readJSON(t, filepath.Join(dir, "analysis.json"))
	levels, _ := dig(a, "levels")
	ymax, over, starved := 0.0, 0, 0
	for _, l := range levels.([]any) {
		lv := l.(map[string]any)
		offered, _ := lv["offered_rps"].(float64)
		if offered > truth {
			over++
			if lv["client_bound"] == true {
				starved++
			}
		}
		realized, ok := lv["realized_rps"].(float64)
		if !ok {
			t.Fatalf("level %v: no realized_rps", offered)
		}
		t.Logf("level %v: valid %v, sustainable %v, client-bound %v, client effect %v", offered, lv["valid"], lv["sustainable"], lv["client_bound"], lv["client_effect"])
		if math.Abs(realized/offered-1) > 0.05 && !strings.Contains(fmt.Sprint(lv["notes"]), "realised arrival rate") {
			t.Errorf("level %v realised %v, more than 5%% off, without a note: %v", offered, realized, lv["notes"])
		}
		if lv["valid"] != true {
			continue
		}
		done, _ := lv["output_tps"].(float64)
		n, _ := lv["mean_output_tokens"].(float64)
		ymax = math.Max(ymax, done/n)
	}
	if starved == over {
		// As in TestRateSweep: a level the client self-check excluded (a 2-core runner busy
		// with other packages' tests) says nothing of the server.
		t.Skip("every level above capacity was client-bound: the capacity is inconclusive on this machine")
	}
	got := checkCapacity(t, a, truth, 0.1)
	iv, _ := dig(a, "rate", "capacity_interval")
	if lo, ok := iv.([]any)[0].(float64); got > ymax || ok && lo > ymax {
		t.Errorf("capacity %.3f, interval %v: above the largest completion rate measured, %.3f", got, iv, ymax)
	}
	t.Logf("capacity %.3f requests/s (truth %.3f), interval %v, largest completion rate %.3f", got, truth, func() any { v, _ := dig(a, "rate", "capacity_interval"); return v }(), ymax)
}
