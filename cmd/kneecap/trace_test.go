package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// TestTraceSweep is issue 15's third acceptance: `kneecap sweep --trace examples/trace-
// mooncake.jsonl --time-scale …` runs and names the largest scale meeting the SLO (scales 2,
// 4, 8 and a 1 s window keep it short). The window 0-1s of the shipped trace (from its first
// arrival) holds 12 requests (mean 539.5 prompt and 51 output tokens; a pass of 1 s: 12
// requests/s at 1×). The engine: 8 slots, t(b) = 1.3 ms + 0.125 ms·b, so X(8) = 8 ÷ 2.3 ms =
// 3,478 tokens/s and its capacity for this window is 3,478 ÷ 51 ≈ 68 requests/s (prefill at
// 10⁶ tokens/s adds 0.5 ms a request: DESIGN §6, simCapacity). At 4× (48/s) Little's law
// puts b = 48 × 51 × t(b) ≈ 4.6 requests in flight, fewer than the 8 slots: hardly a queue,
// TTFT a few steps. At 8× (96/s) it would need b ≈ 16 > 8: arrivals queue for a slot at
// 96 − 68 ≈ 28 requests/s, about 0.3 s of wait by the end of the level, past the SLO's TTFT
// p95 ≤ 100 ms. So 4× is the largest measured scale meeting the SLO and the SLO's scale lies
// in [4, 8). About 5 s under -race.
func TestTraceSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("a sweep of three levels")
	}
	cfg := writeTestConfig(t, `name: trace
simulator: {max_num_seqs: 8, step_base: 1300us, step_per_seq: 125us, prefill_tps: 1000000}
sweep:
  warmup: 200ms
  duration: 500ms
  max_duration: 500ms
  min_requests: 5
  drain_timeout: 10s
  ci_target: 0.5
slo: {ttft_p95: 100ms, tpot_p95: 50ms}
`)
	dir := filepath.Join(t.TempDir(), "run")
	e, stdout, stderr := testEnv()
	args := []string{"sweep", "-c", cfg, "--trace", filepath.Join("..", "..", "examples", "trace-mooncake.jsonl"),
		"--time-scale", "2,4,8", "--trace-window", "0-1s", "-o", dir}
	if err := run(context.Background(), e, args); err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", err, stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 3 || res.Trace == nil || res.Trace.Requests != 12 || res.Trace.MeanRPS != 12 {
		t.Fatalf("%d levels, trace %+v: want 3 levels of the 12 requests at 12/s", len(res.Levels), res.Trace)
	}
	for i, s := range []float64{2, 4, 8} {
		if l := res.Levels[i].Run; l.TimeScale != s || l.OfferedRPS != 12*s {
			t.Errorf("level %d: scale %v offering %v requests/s, want %v and %v", i, l.TimeScale, l.OfferedRPS, s, 12*s)
		}
	}
	a := readJSON(t, filepath.Join(dir, "analysis.json"))
	largest, _ := dig(a, "trace", "largest_scale_meeting_slo")
	scale, _ := dig(a, "trace", "slo_scale")
	answer, _ := dig(a, "trace", "answer")
	t.Logf("trace answer: %v", answer)
	if why := starved(a); largest != 4.0 && why != "" {
		t.Skipf("largest scale meeting the SLO %v on a starved machine: %s", largest, why) // as checkKnee
	}
	if largest != 4.0 {
		levels, _ := dig(a, "levels")
		t.Errorf("largest scale meeting the SLO %v, want 4 (levels %v)\nstderr:\n%s", largest, levels, stderr)
	}
	if s, ok := scale.(float64); !ok || !(s >= 4 && s < 8) {
		t.Errorf("slo_scale %v, want in [4, 8)", scale)
	}
	if !strings.Contains(stdout.String(), "largest measured scale meeting it: 4×") {
		t.Errorf("the console report does not name 4× as the largest scale meeting the SLO:\n%s", stdout)
	}
}

// TestResumedTrace (review finding 7): a new trace replay makes config.yaml keep the trace's
// absolute path (so --resume works from any directory); --resume accepts the same file
// (keeping the name the run gave it) and refuses one whose content changed, exit 2, naming
// both files and hashes.
func TestResumedTrace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.jsonl")
	write := func(text string) *sweep.Trace {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := sweep.LoadTrace(sweep.TraceConfig{File: file})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	rows := "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3}\n{\"timestamp\": 500, \"input_length\": 5, \"output_length\": 3}\n"
	tr := write(rows)
	s := &sweepPrep{}
	s.cfg.Workload.Trace.File = "t.jsonl"
	if err := s.resumedTrace(tr); err != nil || s.cfg.Workload.Trace.File != file {
		t.Fatalf("a new run: %v, config keeps %q: want %q", err, s.cfg.Workload.Trace.File, file)
	}
	was := tr.Info
	was.File = "examples/t.jsonl"
	s = &sweepPrep{done: &rundir.Run{Dir: "run", Trace: &was}}
	if err := s.resumedTrace(write(rows)); err != nil {
		t.Errorf("resume of the same trace: %v", err)
	}
	changed := write(rows + "{\"timestamp\": 900, \"input_length\": 5, \"output_length\": 3}\n")
	err := s.resumedTrace(changed)
	if exitCode(err) != exitUsage || !strings.Contains(errString(err), "is not the one the run replayed") ||
		!strings.Contains(errString(err), was.SHA256) || !strings.Contains(errString(err), changed.Info.SHA256) {
		t.Errorf("resume of a changed trace: exit %d: %v: want exit 2 naming both hashes", exitCode(err), err)
	}
}
