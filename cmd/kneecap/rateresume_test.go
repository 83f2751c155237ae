package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/rundir"
)

// TestRatesFromAnalysisJSON: --from a directory with neither records nor analysis.json is
// one line, exit 2, whose prefix is not doubled (before: "sweep: levels: sweep: --from: …");
// launch.TestProbeFrom reads one that keeps only analysis.json.
func TestRatesFromAnalysisJSON(t *testing.T) {
	tmp := t.TempDir()
	r := runCmd(nil, "sweep", "--rates", "auto", "--from", tmp, "-o", filepath.Join(tmp, "run"))
	if exitCode(r.err) != exitUsage || !strings.HasPrefix(errString(r.err), "sweep: --from: read results ") || !strings.HasSuffix(errString(r.err), "(and it has no analysis.json)") {
		t.Errorf("exit %d: %v: want exit 2, \"sweep: --from: read results …\"", exitCode(r.err), r.err)
	}
}

// TestResumeAfterInterruptedProbe: a --rates auto sweep interrupted during its probe leaves
// a results directory without probe.json (exit 130); --resume of it probes again, writes
// probe.json and runs the rate levels (before: "probe.json cannot be read", exit 2).
func TestResumeAfterInterruptedProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("a probe and a rate sweep")
	}
	t.Parallel()
	cfg := writeTestConfig(t, `name: resumeprobe
sweep: {warmup: 50ms, duration: 200ms, min_requests: 3, max_duration: 400ms, ci_target: 0.3, stop: {max_unsustainable: 1}, retry_excluded: 0}
simulator: {max_num_seqs: 4, step_base: 2ms, step_per_seq: 1ms, prefill_tps: 1000000}
workload: {output_tokens: {dist: fixed, mean: 8}}
`)
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	e.interrupt = interrupted
	err := run(context.Background(), e, []string{"sweep", "-c", cfg, "--rates", "auto", "-o", dir})
	if exitCode(err) != exitInterrupted || !strings.Contains(errString(err), "during the --rates auto probe") {
		t.Fatalf("interrupted probe: exit %d: %v\n%s", exitCode(err), err, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ProbeFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("probe.json after an interrupted probe: %v, want none", err)
	}
	e, _, stderr = testEnv()
	if err := run(context.Background(), e, []string{"sweep", "--resume", dir}); err != nil {
		t.Fatalf("--resume: %v\n%s", err, stderr)
	}
	p, err := launch.ReadProbe(dir)
	if err != nil || p == nil || len(p.Rates) == 0 || !strings.Contains(stderr.String(), "has no probe.json (its probe did not finish): probing again") {
		t.Errorf("probe.json %+v (%v) after --resume; stderr:\n%s", p, err, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "analysis.json")); err != nil {
		t.Errorf("analysis.json: %v", err)
	}
}
