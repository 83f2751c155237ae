package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
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
	t.Logf("added %v; knee %s, blow-up %s, SLO limit %s", added, final.Knee.Concurrency.Format(),
		final.TTFTBlowup.Concurrency.Format(), final.SLO.MaxConcurrency.Format())
}

// TestRefinerStopsOnFailedAddedLevel: an added level whose requests failed (the server went
// down after the planned levels) stops the adding, with a reason naming the rule; a failed
// planned level is the Judge's business, not the refiner's.
func TestRefinerStopsOnFailedAddedLevel(t *testing.T) {
	cfg := config.Default()
	var buf strings.Builder
	r := announcingRefiner{analysis.NewRefiner(cfg.AnalysisOptions(), cfg.Sweep.Stop), newProgress(&buf, false, []int{1, 2}, cfg.Sweep)}
	const w0, w1 = int64(1_000_000_000), int64(2_000_000_000)
	level := func(index, c int, refine string, status record.Status) (record.LevelRun, []record.Record) {
		run := record.LevelRun{Index: index, Concurrency: c, W0: w0, W1: w1, Steady: true, Refine: refine}
		var recs []record.Record
		for i := range 20 {
			recs = append(recs, record.Record{Level: index, Concurrency: c, Worker: i % c, Phase: record.PhaseMeasure,
				Sent: w0 + int64(i)*40_000_000, Status: status, ErrorClass: record.ErrConnect})
		}
		return run, recs
	}
	r0, c0 := level(0, 1, "", record.StatusError)
	r1, c1 := level(1, 4, "test", record.StatusError)
	c, why := r.Refine([]record.Level{{Run: r0, Records: c0}, {Run: r1, Records: c1}})
	if c != 0 || !strings.Contains(why, "added level concurrency 4 had error rate 100.0%, above max_error_rate 5.0%") {
		t.Errorf("Refine = %g, %q; want 0 and the error-rate rule", c, why)
	}
	if !strings.Contains(buf.String(), "kneecap: no more levels added: added level concurrency 4") {
		t.Errorf("progress output %q", buf.String())
	}
	// The same failure on a planned level: the refiner analyzes (no valid level: no answer,
	// nothing to add) but gives no reason to stop.
	if c, why := r.Refine([]record.Level{{Run: r0, Records: c0}}); c != 0 || why != "" {
		t.Errorf("planned failure: Refine = %g, %q; want 0 and no reason", c, why)
	}
}
