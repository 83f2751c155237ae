package main

// Issue 12's client-side acceptance through the CLI: `kneecap sweep` against the in-process
// simulator playing what real engines do — llama-server's keep-alive-then-close, usage that
// lies — from the configuration file to analysis.json and the console report.

import (
	"path/filepath"
	"strings"
	"testing"
)

// realEngineConfig is a short fixed-mode sweep that runs every level (no plateau or overload
// stop); simulator is the simulator's extra keys.
func realEngineConfig(levels, simulator string) string {
	return `workload:
  input_tokens: {dist: fixed, mean: 8}
  output_tokens: {dist: fixed, mean: 8}
sweep:
  levels: [` + levels + `]
  warmup: 100ms
  duration: 400ms
  min_requests: 5
  max_duration: 800ms
  retry_excluded: 0 # the tests count levels; retries are TestRetryExcluded's
  drain_timeout: 5s
  # The tests count levels: a busy machine's dip in TPS must not stop the sweep early.
  stop: {plateau: false, overload: false}
simulator: {profile: fixed, ttft: 2ms, itl: 500us, ` + simulator + `}
`
}

// TestSweepCloseAfterStream: against close_after_stream (keep-alive advertised, the
// connection closed after every stream), a sweep 1, 2, 4, 8 has no error at any level;
// requests that met a closed pooled connection count as retried, not as errors.
func TestSweepCloseAfterStream(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	r := runCmd(nil, "sweep", "-c", writeTestConfig(t, realEngineConfig("1, 2, 4, 8", "close_after_stream: true")), "-o", dir)
	if r.err != nil {
		t.Fatalf("sweep: %v\n%s", r.err, r.stderr)
	}
	levels, _ := dig(readJSON(t, filepath.Join(dir, "analysis.json")), "levels")
	ls, _ := levels.([]any)
	if len(ls) != 4 {
		t.Fatalf("%d levels in analysis.json, want 4", len(ls))
	}
	for _, l := range ls {
		lv := l.(map[string]any)
		if lv["errors"] != 0.0 || lv["requests"] == 0.0 {
			t.Errorf("level %v: %v errors of %v requests (%v), want none", lv["concurrency"], lv["errors"], lv["requests"], lv["error_classes"])
		}
	}
}

// TestSweepUsageLie: a simulator whose usage says completion_tokens 1e12 yields a warning
// naming each level, and TPS from the chunks: at most the simulator's ceiling of concurrency ÷
// (TTFT + 7·ITL) × 8 tokens ≤ 2 ÷ 5.5 ms × 8 ≈ 2,900 tokens/s, not 1e13.
func TestSweepUsageLie(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	r := runCmd(nil, "sweep", "-c", writeTestConfig(t, realEngineConfig("1, 2", "faults: {usage_completion_tokens: 1000000000000}")), "-o", dir)
	if r.err != nil {
		t.Fatalf("sweep: %v\n%s", r.err, r.stderr)
	}
	out := r.stdout + r.stderr
	if want := "usage: the usage the server reported was not believed at concurrency 1 ("; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if n := strings.Count(out, "the usage the server reported was not believed"); n != 1 {
		t.Errorf("the usage warning appears %d times, want once for every level:\n%s", n, out)
	}
	if want := "), 2 ("; !strings.Contains(out, want) {
		t.Errorf("the usage warning does not name level 2:\n%s", out)
	}
	// Each level's TPS, valid or not (a client-bound level under -race is excluded from the
	// headline, not from this bound).
	levels, _ := dig(readJSON(t, filepath.Join(dir, "analysis.json")), "levels")
	ls, _ := levels.([]any)
	if len(ls) != 2 {
		t.Fatalf("%d levels in analysis.json, want 2", len(ls))
	}
	for _, l := range ls {
		lv := l.(map[string]any)
		if v, ok := lv["output_tps"].(float64); !ok || v <= 0 || v > 2*8/5.5e-3 {
			t.Errorf("level %v: output TPS %v, want from chunks: in (0, %.0f]", lv["concurrency"], lv["output_tps"], 2*8/5.5e-3)
		}
		if lv["usage_disbelieved"] != lv["requests"] {
			t.Errorf("level %v: usage not believed for %v of %v requests, want all", lv["concurrency"], lv["usage_disbelieved"], lv["requests"])
		}
	}
}
