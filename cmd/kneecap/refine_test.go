package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/rundir"
)

// TestSweepRefine: with --refine the sweep adds levels after the planned doublings, inside
// the measured range, each where the run's own analysis puts an answer far from a measured
// level, and stops adding when none is left (or at the cap). The simulator has S = 8 slots
// and t(b) = 2 ms + 0.5 ms·b, so the knee and the TTFT blow-up lie near 8, between the planned
// 4 and 16, and TTFT p95 (≈ (c ÷ 8 − 1) × 16 tokens × 6 ms past S) crosses the 200 ms SLO
// near 24, between 16 and 64 (DESIGN §6 ground truth).
func TestSweepRefine(t *testing.T) {
	if testing.Short() {
		t.Skip("a sweep of seven levels")
	}
	cfgPath := writeTestConfig(t, `name: refine
simulator: {max_num_seqs: 8, step_base: 2ms, step_per_seq: 500us, prefill_tps: 1000000}
workload:
  input_tokens: {dist: fixed, mean: 16}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  levels: [1, 4, 16, 64]
  warmup: 300ms
  duration: 1s
  min_requests: 10
  max_duration: 2s
  drain_timeout: 5s
  stop: {plateau: false}
slo: {ttft_p95: 200ms, tpot_p95: 50ms}
`)
	const refine = 3
	dir := filepath.Join(t.TempDir(), "run")
	e, stdout, stderr := testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "--refine", "3", "-o", dir})
	if err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", err, stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.Sweep.Refine != refine {
		t.Errorf("config.yaml keeps refine %d, want %d", res.Config.Sweep.Refine, refine)
	}
	var planned, added []int
	for i, l := range res.Runs() {
		if l.Index != i {
			t.Errorf("level %d has index %d", i, l.Index)
		}
		if l.RetryOf != nil {
			continue // a level excluded on a loaded machine, run again (sweep.retry_excluded)
		}
		if l.Refine == "" {
			if len(added) > 0 {
				t.Errorf("planned level %d ran after added levels %v", l.Concurrency, added)
			}
			planned = append(planned, l.Concurrency)
			continue
		}
		if l.Concurrency <= 1 || l.Concurrency >= 64 || slices.Contains(planned, l.Concurrency) || slices.Contains(added, l.Concurrency) {
			t.Errorf("added level %d: outside (1, 64) or measured already (planned %v, added %v)", l.Concurrency, planned, added)
		}
		if !strings.Contains(l.Refine, "lies between levels") {
			t.Errorf("added level %d: reason %q", l.Concurrency, l.Refine)
		}
		added = append(added, l.Concurrency)
	}
	if !slices.Equal(planned, []int{1, 4, 16, 64}) || len(added) > refine {
		t.Fatalf("planned %v, added %v; want [1 4 16 64] then at most %d added levels", planned, added, refine)
	}
	// The loop ended because no answer was left far from a measured level, or at the cap:
	// the run's final analysis (the same answers; only its bootstrap intervals are extra)
	// asks for no further level.
	final, _, err := readRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var attempted []float64
	for _, c := range append(planned, added...) {
		attempted = append(attempted, float64(c))
	}
	if c, why := analysis.Refinement(final, attempted); c != 0 && len(added) < refine {
		t.Errorf("after %d added levels the analysis still asks for %g (%s)", len(added), c, why)
	}
	var marked int
	invalid := false
	for _, l := range final.Levels {
		if l.Refine != "" {
			marked++
		}
		invalid = invalid || !l.Valid
	}
	if len(added) == 0 {
		// A busy machine can make levels client-bound or unsteady and so invalid: then the
		// answers may be missing and nothing is added; with every level valid, the answers lie
		// far from the planned doublings (see above) and some level must be added.
		if !invalid {
			t.Fatalf("no level added with every level valid:\n%s", stderr)
		}
		t.Skip("some levels were invalid (busy machine): no answers to refine")
	}
	if marked != len(added) {
		t.Errorf("analysis.json marks %d levels as added, want %d", marked, len(added))
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "(added)") || !strings.Contains(string(md), "after the planned levels") {
		t.Errorf("report.md does not show the added levels")
	}
	if n := strings.Count(stderr.String(), "kneecap: adding concurrency"); n != len(added) {
		t.Errorf("stderr announces %d added levels, want %d:\n%s", n, len(added), stderr)
	}
	if !strings.Contains(stdout.String(), "after the planned levels") {
		t.Errorf("the console answer does not name the added levels:\n%s", stdout)
	}
	knee, blowup, slo := "none", "none", final.SLO.MaxConcurrency.Format()
	if final.Knee != nil {
		knee = final.Knee.Concurrency.Format()
	}
	if final.TTFTBlowup != nil {
		blowup = final.TTFTBlowup.Concurrency.Format()
	}
	t.Logf("added %v; knee %s, blow-up %s, SLO limit %s", added, knee, blowup, slo)
}
