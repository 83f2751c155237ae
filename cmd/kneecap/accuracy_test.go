package main

// The accuracy sweeps: whole sweeps of the batching simulator whose numbers (where the knee
// lies, how flat the plateau is) are the assertion, against the ground truth of DESIGN §6.
//
// They run the kneecap binary, built without -race, all five at once, as separate processes.
// The numbers are the client's measurements of simulated time, and the race detector costs
// the client several times its CPU: in-process under -race these sweeps took 90 s one after
// another, and in a run of the suite with nothing else on the machine the acceptance sweep's
// levels from 16 up came out client-bound (run-queue wait 27–40% of the window). As processes
// of their own, each sees only its own threads' run-queue wait (under 10% with four
// running), and the group takes as long as its longest sweep, the demo's. The same code paths
// run in-process under -race in TestSweepSimulator, TestSweepRefine, TestShardedSweepCLI and
// the sweep package's tests. The knee tests are in accuracy_knee_test.go.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/rundir"
)

// kneeConfig is the knee test's sweep with S = maxNumSeqs slots, levels 1 … 4·S doubling.
// The engine's step is 5 ms + 50 µs per running sequence, prefill 2,000,000 tokens/s: the
// GPU-like profile of the issue ("Analysis": 10 ms + 0.1 ms, 1,000,000 tokens/s) at twice the
// speed. The expected values below depend only on the dimensionless step_per_seq·S ÷
// step_base, which the speed-up keeps, and on the answer length: a slot idles for about one
// step between a request's last token and the next request's first (the next one is sent
// when the last token arrives and admitted at a step boundary), so N closed-loop users keep
// about N·n ÷ (n + 1) slots busy and throughput stops growing near S·(n + 1) ÷ n: 4.2% past S
// with n = 24 tokens (measured 4.4–4.7%), 3% with the 32 used here (measured 2–3%), which
// leaves the ±5% of the knee test a margin. The warmup spans one request at S (≈ 160 ms), so
// the closed loops are not phase-locked, and a window holds 10 requests at concurrency 1.
func kneeConfig(maxNumSeqs int) string {
	return fmt.Sprintf(`name: knee-%d
simulator:
  profile: demo
  max_num_seqs: %d
  step_base: 5ms
  step_per_seq: 50us
  prefill_tps: 2000000
  seed: 1
workload:
  input_tokens: {dist: fixed, mean: 16}
  output_tokens: {dist: fixed, mean: 32}
  fixed_output: true
sweep:
  levels: {start: 1, max: %d, factor: 2}
  warmup: 200ms
  duration: 1s
  min_requests: 10
  max_duration: 2s
  drain_timeout: 10s
  stop: {plateau: false, overload: false}
`, maxNumSeqs, maxNumSeqs, 4*maxNumSeqs)
}

// demoConfig is the demo (config.Demo: the demo profile's 32 slots and step 4 ms + 250 µs
// per sequence, 128-token prompts and 64-token answers fixed, levels doubling, two levels
// added where answers lie between doublings) at twice the speed, as the knee test's sweeps
// are: step 2 ms + 125 µs, prefill 100,000 tokens/s. Its levels stop at 64, one doubling past
// S (the plateau needs one level), and its windows hold 16 requests at concurrency 1 (136 ms
// each), so that Little's law is not broken by the one request a window cuts.
const demoConfig = `name: demo-fast
simulator:
  profile: demo
  step_base: 2ms
  step_per_seq: 125us
  prefill_tps: 100000
workload:
  input_tokens: {dist: fixed, mean: 128}
  output_tokens: {dist: fixed, mean: 64}
  fixed_output: true
sweep:
  levels: {start: 1, max: 64, factor: 2}
  warmup: 400ms
  duration: 1s
  min_requests: 16
  max_duration: 2500ms
  drain_timeout: 10s
  refine: 2
`

// acceptanceConfig is the sweep of DESIGN's acceptance check: max_num_seqs 16, levels 1 → 128
// doubling. Its engine (2 ms + 125 µs per sequence, prefill 50,000 tokens/s) runs at twice
// the speed, as the knee test's does: step 1 ms + 62.5 µs, prefill 100,000 tokens/s, warmup
// and windows halved.
const acceptanceConfig = `name: acceptance
simulator:
  max_num_seqs: 16
  step_base: 1ms
  step_per_seq: 62.5us
  prefill_tps: 100000
workload:
  input_tokens: {dist: fixed, mean: 32}
  output_tokens: {dist: fixed, mean: 32}
sweep:
  levels: {start: 1, max: 128, factor: 2}
  warmup: 100ms
  duration: 500ms
  min_requests: 10
  max_duration: 1s
  drain_timeout: 10s
  stop: {plateau: false}
`

// accuracySweep is one sweep of the group and, once run, its results directory, stderr, exit
// error and wall time.
type accuracySweep struct {
	config string
	dir    string
	stderr string
	err    error
	took   time.Duration
}

// accuracy is the group, run by the first test that asks (once per -count round).
var accuracy shared[map[string]*accuracySweep]

// accuracyRun returns the named sweep of the group ("knee-4", "knee-8", "knee-16", "demo",
// "acceptance"), running the whole group at once the first time; the test fails if that
// sweep failed.
func accuracyRun(t *testing.T, name string) *accuracySweep {
	t.Helper()
	bin := kneecapBinary(t)
	sweeps := accuracy.get(t, func() map[string]*accuracySweep {
		sweeps := map[string]*accuracySweep{"acceptance": {config: acceptanceConfig}, "demo": {config: demoConfig}}
		for _, s := range []int{4, 8, 16} {
			sweeps[fmt.Sprintf("knee-%d", s)] = &accuracySweep{config: kneeConfig(s)}
		}
		var wg sync.WaitGroup
		for name, s := range sweeps {
			wg.Go(func() { s.run(bin, name) })
		}
		wg.Wait()
		return sweeps
	})
	s := sweeps[name]
	if s.err != nil {
		t.Fatalf("sweep %s: %v\n%s", name, s.err, s.stderr)
	}
	return s
}

// run runs `kneecap sweep -c CONFIG -o DIR` in a directory of its own under testRoot.
func (s *accuracySweep) run(bin, name string) {
	start := time.Now()
	defer func() { s.took = time.Since(start) }()
	base, err := os.MkdirTemp(testRoot, name)
	if err != nil {
		s.err = err
		return
	}
	cfg := filepath.Join(base, name+".yaml")
	if s.err = os.WriteFile(cfg, []byte(s.config), 0o644); s.err != nil {
		return
	}
	s.dir = filepath.Join(base, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "sweep", "-c", cfg, "-o", s.dir)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL=", "OPENAI_API_KEY=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	s.err = cmd.Run()
	s.stderr = stderr.String()
}

// TestSweepAcceptance is DESIGN's acceptance check of the whole pipeline: a simulator with
// max_num_seqs 16 swept 1 → 128 doubling shows output TPS flat (±15%) from 16 up and TTFT p50
// at 64 at least 3× that at 8. Reference (DESIGN §6 ground truth): TPS(c) = c ÷ t(c) up to
// S = 16 and flat at S ÷ t(S) beyond (t(16) = 1 ms + 16 × 62.5 µs = 2 ms: 8,000 tokens/s);
// TTFT grows linearly past S as requests queue for a slot.
func TestSweepAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1→128 sweep of the binary, about 10 s")
	}
	sw := accuracyRun(t, "acceptance")
	t.Logf("progress:\n%s", sw.stderr)
	res, err := rundir.Read(sw.dir)
	if err != nil {
		t.Fatal(err)
	}
	groups := res.Levels
	by := map[int]levelSummary{}
	for i, l := range res.Runs() {
		by[l.Concurrency] = summarizeLevel(groups[i])
	}
	for _, c := range []int{8, 16, 32, 64} {
		if _, ok := by[c]; !ok {
			t.Fatalf("no level %d (stop: %s)", c, res.StopReason)
		}
	}
	var sat []float64
	for c := 16; c <= 128; c *= 2 {
		if s, ok := by[c]; ok {
			sat = append(sat, s.OutputTPS)
		}
	}
	var mean float64
	for _, v := range sat {
		mean += v
	}
	mean /= float64(len(sat))
	var misses []string
	for i, v := range sat {
		if v < 0.85*mean || v > 1.15*mean {
			misses = append(misses, fmt.Sprintf("TPS at concurrency %d is %.0f, more than 15%% from the plateau mean %.0f", 16<<i, v, mean))
		}
	}
	// The plateau is the engine's S ÷ t(S) less prefill and closed-loop gaps: within 25%.
	ideal := res.Config.Simulator.IdealTPS(16)
	if mean > 1.02*ideal || mean < 0.75*ideal {
		misses = append(misses, fmt.Sprintf("plateau %.0f tokens/s, ideal S÷t(S) = %.0f", mean, ideal))
	}
	if r := float64(by[64].TTFTP50) / float64(by[8].TTFTP50); !(r >= 3) {
		misses = append(misses, fmt.Sprintf("TTFT p50 at 64 (%v) is %.1f× that at 8 (%v), want ≥ 3×", by[64].TTFTP50, r, by[8].TTFTP50))
	}
	// The engine is steady by construction: a miss the client self-check explains (a busy
	// machine, client-bound or excluded levels) is inconclusive, not a failure.
	if why := starved(readJSON(t, filepath.Join(sw.dir, "analysis.json"))); len(misses) > 0 && why != "" {
		t.Skipf("inconclusive, %s: %s", why, strings.Join(misses, "; "))
	}
	for _, m := range misses {
		t.Error(m)
	}
}
