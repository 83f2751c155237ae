package main

// Issue 25's embeddings acceptance through the CLI: `kneecap sweep` with target.api
// embeddings against the in-process simulator's embedding engine, from the configuration
// file to analysis.json and report.md.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/sim"
)

// embedEngine is the acceptance sweep's encoder: passes of at most 8 inputs, 12 ms + 20 µs a
// token. Its inputs are 50 tokens (workload.input_tokens, sized by the simulator's /tokenize),
// 4 a request (workload.batch): a full pass (two requests) takes 20 ms, a request alone at
// concurrency 1 16 ms, of which the client's turnaround between requests is a few per cent
// under -race: sweep.client_tolerance accepts 5%.
var embedEngine = sim.Embed{Batch: 8, StepBase: 12 * time.Millisecond, PerToken: 20 * time.Microsecond}

// TestSweepEmbeddings: an embeddings sweep of concurrency 1, 4 and 16 finds the engine's
// plateau, Batch·L ÷ (StepBase + Batch·L·PerToken) = 400 ÷ 20 ms = 20,000 input tokens/s
// (sim.Embed's plateau), within ±5% — the best level's input TPS (throughput.max_tps) and the
// input TPS of each level on the plateau (4 and 16: full passes) — with requests/s, inputs/s and
// latency per level, no TTFT, TPOT or ITL key in any level of analysis.json, and no TTFT
// table or column in report.md. A starved machine skips it (starved).
func TestSweepEmbeddings(t *testing.T) {
	if testing.Short() {
		t.Skip("an embeddings sweep of three levels, about 5 s")
	}
	t.Parallel()
	cfg := writeTestConfig(t, `target: {api: embeddings}
workload:
  input_tokens: {dist: fixed, mean: 50}
  batch: 4
sweep:
  levels: [1, 4, 16]
  warmup: 300ms
  duration: 1s
  max_duration: 2s
  min_requests: 50
  client_tolerance: 0.05
simulator:
  embed: {batch: 8, step_base: 12ms, per_token: 20us}
`)
	dir := filepath.Join(t.TempDir(), "run")
	r := runCmd(nil, "sweep", "-c", cfg, "-o", dir)
	if r.err != nil {
		t.Fatalf("sweep: %v\n%s", r.err, r.stderr)
	}
	m := readJSON(t, filepath.Join(dir, "analysis.json"))
	if why := starved(m); why != "" {
		t.Skipf("inconclusive: %s", why)
	}
	if api, _ := dig(m, "meta", "api"); api != "embeddings" {
		t.Errorf("meta.api = %v, want embeddings", api)
	}
	v, _ := dig(m, "levels")
	levels, ok := v.([]any)
	if !ok || len(levels) == 0 {
		t.Fatalf("analysis.json has no levels: %v", v)
	}
	for _, l := range levels {
		lm, _ := l.(map[string]any)
		for _, k := range []string{"ttft_ms", "tpot_ms", "itl_ms", "ttfa_ms"} {
			if _, ok := lm[k]; ok {
				t.Errorf("level %v has %s", lm["concurrency"], k)
			}
		}
		for _, k := range []string{"qps", "inputs_per_s", "input_tps", "e2e_ms"} {
			if _, ok := lm[k]; !ok {
				t.Errorf("level %v lacks %s", lm["concurrency"], k)
			}
		}
	}
	pass := float64(embedEngine.Batch * 50) // the input tokens of a full pass
	want := pass / (embedEngine.StepBase.Seconds() + pass*embedEngine.PerToken.Seconds())
	checkNumber(t, m, "plateau (max input TPS)", []string{"throughput", "max_tps"}, want, 0.05)
	for _, l := range levels {
		lm, _ := l.(map[string]any)
		if c, _ := lm["concurrency"].(float64); c >= 4 && lm["valid"] == true {
			checkNumber(t, lm, fmt.Sprintf("input TPS at concurrency %v", lm["concurrency"]), []string{"input_tps"}, want, 0.05)
		}
	}
	got, _ := dig(m, "throughput", "max_tps")
	t.Logf("plateau: measured %v input tokens/s, derived %.0f", got, want)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, levelsTable, found := strings.Cut(string(md), "## Levels")
	if !found {
		t.Fatalf("report.md has no Levels section:\n%s", md)
	}
	levelsTable, _, _ = strings.Cut(levelsTable, "\n\n## ")
	for _, want := range []string{"input TPS (tokens/s)", "inputs/s", "latency p95 (ms)"} {
		if !strings.Contains(levelsTable, want) {
			t.Errorf("report.md's level table lacks %q:\n%s", want, levelsTable)
		}
	}
	if strings.Contains(levelsTable, "TTFT") || strings.Contains(levelsTable, "TPOT") || strings.Contains(string(md), "| TTFT |") {
		t.Errorf("report.md has a TTFT or TPOT column or method row:\n%s", md)
	}
}
