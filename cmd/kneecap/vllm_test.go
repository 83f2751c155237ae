package main

// The acceptance of issue 16's vLLM import: a directory of vLLM bench serve results saved
// with the default --metric-percentiles (p99 only) and a stray JSON file.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// vllmDefaultDir writes vLLM results at concurrency 1 … 16 whose TTFT p99 is 20·c² ms and
// which have no p95, and notes.json, which is no vLLM result.
func vllmDefaultDir(t *testing.T) string {
	dir := t.TempDir()
	for _, c := range []int{1, 2, 4, 8, 16} {
		ttft := 10 * c * c
		writeIn(t, dir, fmt.Sprintf("vllm-%dc.json", c), fmt.Sprintf(`{"backend": "vllm", "model_id": "m",
			"max_concurrency": %d, "duration": 60, "completed": %d, "num_prompts": %d,
			"request_throughput": %d, "output_throughput": %d,
			"mean_ttft_ms": %d, "median_ttft_ms": %d, "p99_ttft_ms": %d,
			"mean_tpot_ms": 10, "median_tpot_ms": 10, "p99_tpot_ms": 12}`, c, 100*c, 100*c, c, 100*c, ttft, ttft, 2*ttft))
	}
	writeIn(t, dir, "notes.json", `{"gpu": "H100", "author": "me"}`)
	return dir
}

// analyze --slo ttft:p99:1s gives an SLO point between 4 and 8 (TTFT p99 320 and 1,280 ms)
// and says once that notes.json was skipped.
func TestAnalyzeVLLMDefaultPercentiles(t *testing.T) {
	dir := vllmDefaultDir(t)
	out := filepath.Join(t.TempDir(), "out")
	r := runCmd(nil, "analyze", dir, "-o", out, "--slo", "ttft:p99:1s", "--bootstrap", "0")
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	m := readJSON(t, filepath.Join(out, "analysis.json"))
	c, _ := dig(m, "slo", "max_concurrency")
	limit, _ := dig(m, "slo", "limit")
	if v, ok := c.(float64); !ok || v < 4 || v > 8 || limit != "ttft_p99" {
		t.Errorf("slo max_concurrency %v limit %v, want in [4, 8] bound by ttft_p99", c, limit)
	}
	if n := strings.Count(r.stdout+r.stderr, "notes.json skipped"); n != 1 {
		t.Errorf("%d warnings about notes.json, want 1:\n%s\n%s", n, r.stdout, r.stderr)
	}
	ws, _ := dig(m, "warnings")
	if !strings.Contains(fmt.Sprint(ws), "notes.json skipped") {
		t.Errorf("analysis.json warnings %v lack notes.json", ws)
	}
}

// analyze --format json prints analysis.json, and only it, on stdout; the summary goes to
// stderr.
func TestAnalyzeFormatJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	r := runCmd(nil, "analyze", vllmDefaultDir(t), "-o", out, "--format", "json", "--bootstrap", "0")
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || m["schema"] != "kneecap.analysis/v1" {
		t.Fatalf("stdout is not analysis.json (%v): %.200q", err, r.stdout)
	}
	if !strings.Contains(r.stderr, "notes.json skipped") {
		t.Errorf("stderr lacks the summary's warnings: %.300q", r.stderr)
	}
	if r := runCmd(nil, "analyze", vllmDefaultDir(t), "-o", out, "--format", "yaml"); exitCode(r.err) != exitUsage {
		t.Errorf("--format yaml: exit %d", exitCode(r.err))
	}
}
