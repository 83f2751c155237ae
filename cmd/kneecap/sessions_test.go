package main

// Issue 15's sessions acceptance through the CLI: `kneecap sweep` with workload.sessions
// against the in-process simulator with prefix caching, from the configuration file to
// records.jsonl, analysis.json and report.md; and the combinations refused.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepSessions: a 3-turn session sweep (one level of 0.4 s) writes records with
// session and turn, levels[0].turns in analysis.json — turn 3's prompt T + 3U + 2O = 40 + 3 ×
// 100 + 2 × 4 = 348 tokens by the simulator's usage — and a By turn table in report.md;
// sessions with target.api completions or a rate sweep are exit 2.
func TestSweepSessions(t *testing.T) {
	t.Parallel()
	cfg := writeTestConfig(t, `workload:
  output_tokens: {dist: fixed, mean: 4}
  sessions:
    turns: {dist: fixed, mean: 3}
    user_tokens: {dist: fixed, mean: 100}
sweep:
  levels: [1]
  warmup: 100ms
  duration: 400ms
  min_requests: 5
  max_duration: 800ms
simulator: {prefill_tps: 20000, chat_template_tokens: 40, prefix_caching: true, step_base: 1ms}
`)
	dir := filepath.Join(t.TempDir(), "run")
	r := runCmd(nil, "sweep", "-c", cfg, "-o", dir)
	if r.err != nil {
		t.Fatalf("sweep: %v\n%s", r.err, r.stderr)
	}
	recs, err := os.ReadFile(filepath.Join(dir, "records.jsonl"))
	if err != nil || !strings.Contains(string(recs), `"session":"0.0.0","turn":1`) || !strings.Contains(string(recs), `"turn":3`) {
		t.Errorf("records.jsonl lacks session and turn (%v)", err)
	}
	levels, _ := dig(readJSON(t, filepath.Join(dir, "analysis.json")), "levels")
	turns, _ := levels.([]any)[0].(map[string]any)["turns"].([]any)
	if len(turns) != 3 || turns[2].(map[string]any)["prompt_tokens_p50"] != 348.0 {
		t.Errorf("levels[0].turns = %v: want 3 turns, the third of 348 prompt tokens", turns)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "## By turn") || !strings.Contains(string(md), "| 3 | ") {
		t.Errorf("report.md has no By turn table")
	}
	for _, extra := range []string{"target: {api: completions}\n", "sweep: {mode: rate, rates: [1]}\n"} {
		bad := writeTestConfig(t, "workload:\n  sessions: {turns: {dist: fixed, mean: 2}}\n"+extra)
		r := runCmd(nil, "sweep", "-c", bad, "-o", filepath.Join(t.TempDir(), "x"))
		if code := exitCode(r.err); code != exitUsage || !strings.Contains(r.stderr, "fast.yaml:2: workload.sessions:") {
			t.Errorf("%q: exit %d (%v), want %d naming FILE:2: workload.sessions\n%s", extra, code, r.err, exitUsage, r.stderr)
		}
	}
}
