package main

// Issue 25's model-mix acceptance through the CLI: `kneecap sweep` with workload.models
// against the in-process simulator, which serves the workload's models (one adapter slowed),
// from the configuration file to records.jsonl, analysis.json and report.md.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepModelMix: a mix of kneecap-sim (the base model, weight 0.5), sql-lora (0.3,
// slowdown 4 in simulator.adapters) and chat-lora (0.2, served by the simulator because the
// workload names it, slowdown 1). Every record names its model; over the run's N ≥ 2,600
// requests each model's share is within 3 points of its weight, more than 3 binomial
// standard deviations (σ = √(0.25 ÷ 2,600) = 0.98 points at 0.5, the largest); each level's
// by_model shares are within 4 σ of the level's own count. At concurrency 1 the engine runs
// one request at a time with a negligible prefill, so a base request's TTFT is one step of
// 5 ms and sql-lora's four (sim/adapters.go): 4× the base's, above the warning's 2× while the
// client adds less than 10 ms to both (a few hundred µs on a quiet machine; slowdown 3 left
// too little room on a busy one, where the client's lateness reached 5 ms at p95); the warning
// names sql-lora against another model. The request count and that ratio depend on the
// client's pace: on a machine that starved the client (fewer requests, its lateness in every
// TTFT) they are inconclusive and the test skips, after the checks that hold at any pace (the
// models of the records, their shares within 4 σ of the run's own count, by_model, report.md).
func TestSweepModelMix(t *testing.T) {
	t.Parallel()
	cfg := writeTestConfig(t, `workload:
  input_tokens: {dist: fixed, mean: 16}
  output_tokens: {dist: fixed, mean: 2}
  fixed_output: true
  models:
    - {name: kneecap-sim, weight: 0.5}
    - {name: sql-lora, weight: 0.3}
    - {name: chat-lora, weight: 0.2}
sweep:
  levels: [1, 32]
  warmup: 100ms
  duration: 2s
  min_requests: 80
  max_duration: 2500ms
  retry_excluded: 0
simulator: {step_base: 5ms, step_per_seq: 1us, prefill_tps: 1000000, adapters: [{name: sql-lora, slowdown: 4}]}
`)
	dir := filepath.Join(t.TempDir(), "run")
	r := runCmd(nil, "sweep", "-c", cfg, "-o", dir)
	if r.err != nil {
		t.Fatalf("sweep: %v\n%s", r.err, r.stderr)
	}
	m := readJSON(t, filepath.Join(dir, "analysis.json"))
	weights := map[string]float64{"kneecap-sim": 0.5, "sql-lora": 0.3, "chat-lora": 0.2}
	counts, n := modelCounts(t, filepath.Join(dir, "records.jsonl"))
	t.Logf("%d requests: %v", n, counts)

	// What holds at any pace: every record names one of the mix's models, each model's share
	// is within 4 σ of its weight at the run's own count and each level's, every level has
	// its by_model entries, and report.md its By model table.
	if len(counts) != len(weights) {
		t.Errorf("models in records.jsonl %v, want only %v", counts, weights)
	}
	for m, w := range weights {
		share := float64(counts[m]) / float64(n)
		t.Logf("model %s: share %.4f (weight %.1f)", m, share, w)
		if sd := math.Sqrt(w * (1 - w) / float64(n)); math.Abs(share-w) > 4*sd {
			t.Errorf("model %s: share %.4f of %d requests, want %.1f ± %.3f (4 σ)", m, share, n, w, 4*sd)
		}
	}
	levels, _ := m["levels"].([]any)
	var ttft1 map[string]float64
	for _, l := range levels {
		lm := l.(map[string]any)
		byModel, _ := lm["by_model"].([]any)
		total := lm["requests"].(float64)
		p95 := map[string]float64{}
		for _, b := range byModel {
			bm := b.(map[string]any)
			name, share := bm["model"].(string), bm["share"].(float64)
			p95[name], _ = bm["ttft_p95_ms"].(float64)
			w := weights[name]
			if sd := math.Sqrt(w * (1 - w) / total); math.Abs(share-w) > 4*sd {
				t.Errorf("concurrency %v: model %s share %.3f of %v requests, want %.1f ± %.3f (4 σ)", lm["concurrency"], name, share, total, w, 4*sd)
			}
		}
		if len(byModel) != 3 {
			t.Errorf("concurrency %v: by_model %v, want the 3 models", lm["concurrency"], byModel)
		}
		if lm["concurrency"] == 1.0 {
			ttft1 = p95
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "## By model") || !strings.Contains(string(md), "| sql-lora | ") {
		t.Errorf("report.md has no By model table with sql-lora")
	}

	// What needs the client's pace: the request count that makes 3 points more than 3 σ, and
	// sql-lora's TTFT ratio at concurrency 1 (the client's lateness is in every TTFT).
	var paced []string
	if n < 2600 {
		paced = append(paced, fmt.Sprintf("%d requests in the run, want ≥ 2,600 for 3 points to be > 3 σ", n))
	} else {
		for m, w := range weights {
			if share := float64(counts[m]) / float64(n); math.Abs(share-w) > 0.03 {
				t.Errorf("model %s: share %.4f of %d requests, want %.1f ± 0.03", m, share, n, w)
			}
		}
	}
	ratio := ttft1["sql-lora"] / math.Max(ttft1["kneecap-sim"], ttft1["chat-lora"])
	t.Logf("concurrency 1: TTFT p95 %v; sql-lora ÷ the slower of the others %.2f", ttft1, ratio)
	var flagged bool
	for _, w := range m["warnings"].([]any) {
		s := w.(string)
		flagged = flagged || strings.HasPrefix(s, `model mix: model "sql-lora"'s TTFT p95 is more than 2×`) && strings.Contains(s, "concurrency 1 (")
	}
	if !flagged {
		paced = append(paced, fmt.Sprintf("no warning flags sql-lora at concurrency 1 (TTFT p95 ratio %.2f): %v", ratio, m["warnings"]))
	}
	if len(paced) > 0 {
		if why := starved(m); why != "" {
			t.Skipf("%s; inconclusive: %s", strings.Join(paced, "; "), why)
		}
		t.Error(strings.Join(paced, "; "))
	}
}

// modelCounts counts the records of a records.jsonl by model, and all of them.
func modelCounts(t *testing.T, path string) (map[string]int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts, n := map[string]int{}, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		counts[rec.Model]++
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return counts, n
}

// TestSimAdaptersFlag: `kneecap sim --adapters` serves LoRA adapters (the banner names them,
// slowdowns as ×k); a bad slowdown is a problem naming the key and, in a file, its
// FILE:LINE, and an unparsable flag a usage error, exit 2 either way.
func TestSimAdaptersFlag(t *testing.T) {
	e, stderr := simEnv()
	if err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0", "--adapters", "sql-lora:3,chat-lora"}); err != nil {
		t.Fatalf("sim: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), "adapters=sql-lora×3,chat-lora") {
		t.Errorf("banner lacks the adapters:\n%s", stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", writeTestConfig(t, "simulator:\n  adapters: [{name: x, slowdown: 0.5}]\n")}, ".yaml:2: simulator.adapters: entry 0 (x): slowdown 0.5 must be a finite number ≥ 1"},
		{[]string{"--adapters", "a,a"}, `sim: adapters: entry 1: "a" is served already`},
		{[]string{"--adapters", "a:fast"}, `--adapters: "a:fast": slowdown "fast" is not a number`},
	} {
		wantSimUsage(t, tc.args, tc.want)
	}
}
