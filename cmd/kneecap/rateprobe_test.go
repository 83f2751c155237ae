package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/sim"
)

// TestRatesAutoSlowRequests: --rates auto against a server whose request (8 tokens at 25 ms
// + 5 ms a sequence, ≈ 0.27 s) takes longer than the sweep's whole window (max_duration 100
// ms): the probe's windows, sized from the pilot request (3 × its E2E), let its levels
// complete requests, so it finds the simulator's capacity (simCapacity: 11.1 requests/s)
// within 15% from a valid level and plans the rates from it (probe.json).
func TestRatesAutoSlowRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("a probe and a rate sweep")
	}
	t.Parallel() // its 20 s are waits on a slow engine; a starved probe is inconclusive (probeStarved)
	c, err := sim.Resolve(sim.Config{MaxNumSeqs: 4, StepBase: 25 * time.Millisecond, StepPerSeq: 5 * time.Millisecond, PrefillTPS: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	truth := simCapacity(c, 16, 8)
	cfgPath := writeTestConfig(t, `name: slow
simulator: {max_num_seqs: 4, step_base: 25ms, step_per_seq: 5ms, prefill_tps: 1000000}
workload:
  input_tokens: {dist: fixed, mean: 16}
  output_tokens: {dist: fixed, mean: 8}
sweep:
  warmup: 50ms
  duration: 50ms
  max_duration: 100ms
  min_requests: 3
  drain_timeout: 1s
  ci_target: 0.3
  stop: {max_unsustainable: 1}
`)
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "--rates", "auto", "-o", dir}); err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", err, stderr)
	}
	p, err := launch.ReadProbe(dir)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.MaxQPS/truth-1) > 0.15 || p.Estimate != "" {
		if why := probeStarved(p); why != "" {
			t.Skipf("max QPS %.2f (estimate %q) for %.2f: inconclusive, %s", p.MaxQPS, p.Estimate, truth, why)
		}
		t.Errorf("max QPS %.2f (estimate %q), want %.2f ± 15%% from a valid level\nstderr:\n%s", p.MaxQPS, p.Estimate, truth, stderr)
	}
	if e2e := p.PilotE2EMs; !(e2e > 100) || p.WindowS < 3*e2e/1000-1e-9 {
		t.Errorf("pilot E2E %.0f ms, window %.2f s: want a request longer than max_duration 100 ms and a window ≥ 3 × it", e2e, p.WindowS)
	}
	if _, err := os.Stat(filepath.Join(dir, "analysis.json")); err != nil || !strings.Contains(stderr.String(), "windows of ") {
		t.Errorf("analysis.json: %v; stderr:\n%s", err, stderr)
	}
}

// probeStarved says why a probe on this machine proves nothing, or "": the client self-check
// found a probe level client-bound or the machine busy (DESIGN §3.3). The simulator is steady
// by construction, so a level it excluded beside such a level lost its requests to the
// machine, and the max QPS comes from fewer levels.
func probeStarved(p *launch.Probe) string {
	for _, l := range p.Levels {
		notes := strings.Join(l.Notes, "; ")
		if l.ClientBound || strings.Contains(notes, "machine busy") {
			return fmt.Sprintf("the client self-check found concurrency %d client-bound or the machine busy (%s)", l.Concurrency, notes)
		}
	}
	return ""
}
