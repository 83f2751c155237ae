package summary

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
)

// testdata/vllm holds vLLM bench serve result files (the key set of
// benchmarks/benchmark_serving.py's --save-result JSON, with --percentile-metrics
// ttft,tpot,itl,e2el and --metric-percentiles 95,99) generated from the simulator's ground
// truth with S = 8; the 32-user file lists one failed request in "errors".
func TestReadVLLMBench(t *testing.T) {
	levels, meta, _, err := readVLLMBench(filepath.Join("testdata", "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(levels) != 6 || levels[0].Concurrency != 1 || levels[5].Concurrency != 32 {
		t.Fatalf("levels: %d, first %d", len(levels), levels[0].Concurrency)
	}
	if meta.Model != "meta-llama/Llama-3.1-8B-Instruct" || meta.Date != "2025-01-01T12:01:00Z" {
		t.Errorf("meta = %+v", meta)
	}
	l := levels[3] // 8 users: TPS = 8 / 6 ms
	if d := float64(l.OutputTPS) - 8/6e-3; d*d > 1e-12 || !l.TTFT.P95.OK() || !l.E2E.P99.OK() || l.TTFT.P90.OK() {
		t.Errorf("level 8: %+v", l)
	}
	if e := levels[5]; e.Errors != 1 || e.Requests != 640 {
		t.Errorf("level 32: errors %d of %d, want 1 of 640", e.Errors, e.Requests)
	}
	r := analysis.Analyze(levels, meta, analysis.Options{Bootstrap: 20})
	if r.Knee == nil || r.Knee.Concurrency < 5 || r.Knee.Concurrency > 10 {
		t.Errorf("knee %+v, want near 8; warnings %q", r.Knee, r.Warnings)
	}
}

func TestReadVLLMBenchErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, _, err := readVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "no vLLM result") {
		t.Errorf("empty dir: %v", err)
	}
	bad := filepath.Join(dir, "a.json")
	os.WriteFile(bad, []byte(`{"max_concurrency": null, "output_throughput": 3}`), 0o644)
	if _, _, _, err := readVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "a.json") || !strings.Contains(err.Error(), "max_concurrency") {
		t.Errorf("null max_concurrency: %v", err)
	}
	os.WriteFile(bad, []byte(`{"max_concurrency": 4}`), 0o644)
	if _, _, _, err := readVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "output_throughput") {
		t.Errorf("no output_throughput: %v", err)
	}
	os.WriteFile(bad, []byte(`{"max_concurrency": 4, "output_throughput": 3}`), 0o644)
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"max_concurrency": 4, "output_throughput": 3}`), 0o644)
	if _, _, _, err := readVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("duplicate: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{not json`), 0o644)
	os.Remove(bad)
	if _, _, _, err := readVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "no vLLM result") || !strings.Contains(err.Error(), "skipped 1") {
		t.Errorf("only a stray file: %v", err)
	}
	if _, _, _, err := readVLLMBench(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing dir: no error")
	}
}

// TestReadVLLMBenchPerRequest: a result saved with --save-detailed has its latencies
// recomputed from the per-request lists, failed requests excluded. Expected values are
// numpy.percentile's default (linear, R type 7) over the lists written below.
func TestReadVLLMBenchPerRequest(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "c2.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head := `{"max_concurrency": 2, "output_throughput": 100, "duration": 10, "completed": 5, "num_prompts": 6,
		"median_ttft_ms": 999, "p99_ttft_ms": 999,`
	write(head + `
		"ttfts": [0.010, 0.020, 0.030, 0.040, 0.050, 0],
		"itls": [[0.005, 0.005], [0.005, 0.005], [0.010, 0.010], [0.005, 0.005], [0.005, 0.005], []],
		"output_lens": [3, 3, 3, 3, 3, 0],
		"errors": ["", "", "", "", "", "connection reset"]}`)
	levels, _, _, err := readVLLMBench(dir)
	if err != nil {
		t.Fatal(err)
	}
	l := levels[0]
	// TTFT 10..50 ms: p50 30, p95 = 40 + 0.8·10 = 48. E2E = TTFT + Σ ITL: 20, 30, 50, 50, 60.
	// TPOT = (E2E − TTFT) ÷ 2: 5, 5, 10, 5, 5 → p95 = 5 + 0.8·5 = 9. ITL: eight 5s, two 10s.
	for _, c := range []struct {
		name      string
		got, want analysis.Float
	}{
		{"TTFT p50", l.TTFT.P50, 30}, {"TTFT p95", l.TTFT.P95, 48}, {"TTFT p99", l.TTFT.P99, 49.6},
		{"E2E p50", l.E2E.P50, 50}, {"E2E mean", l.E2E.Mean, 42},
		{"TPOT p50", l.TPOT.P50, 5}, {"TPOT p95", l.TPOT.P95, 9},
		{"ITL p50", l.ITL.P50, 5}, {"ITL p90", l.ITL.P90, 10},
	} {
		if d := float64(c.got - c.want); d*d > 1e-18 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if l.Errors != 1 || l.Requests != 6 {
		t.Errorf("errors %d of %d, want 1 of 6", l.Errors, l.Requests)
	}
	if !strings.Contains(strings.Join(l.Notes, "; "), "recomputed from the per-request lists of 5 successful requests") {
		t.Errorf("notes %q lack the recomputation", l.Notes)
	}

	// Lists whose lengths disagree are ignored, with a note; the aggregates stand.
	write(head + `"ttfts": [0.010, 0.020], "itls": [[0.005]], "output_lens": [2, 2]}`)
	if levels, _, _, err = readVLLMBench(dir); err != nil {
		t.Fatal(err)
	}
	l = levels[0]
	if l.TTFT.P50 != 999 || !strings.Contains(strings.Join(l.Notes, "; "), "per-request lists ignored (list lengths differ") {
		t.Errorf("mismatched lists: TTFT p50 %v, notes %q; want the aggregate 999 and a note", l.TTFT.P50, l.Notes)
	}
}

// A directory of vLLM results saved with the default --metric-percentiles (99: no p95) and a
// stray JSON file beside them: the stray file is skipped with one warning naming it, the
// results import with null p95s, and a TTFT p99 SLO gives an SLO point.
func TestReadVLLMBenchDefaultPercentilesAndStray(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []int{1, 2, 4, 8, 16} {
		ttft := 10.0 * float64(c) * float64(c)
		writeJSON(t, filepath.Join(dir, fmt.Sprintf("vllm-%dc.json", c)), map[string]any{
			"backend": "vllm", "model_id": "m", "max_concurrency": c, "duration": 60.0, "completed": 100 * c,
			"num_prompts": 100 * c, "request_throughput": float64(c), "output_throughput": 100.0 * float64(c),
			"mean_ttft_ms": ttft, "median_ttft_ms": ttft, "std_ttft_ms": 1.0, "p99_ttft_ms": 2 * ttft,
			"mean_tpot_ms": 10.0, "median_tpot_ms": 10.0, "p99_tpot_ms": 12.0,
		})
	}
	writeJSON(t, filepath.Join(dir, "notes.json"), map[string]any{"author": "me", "gpu": "H100"})
	in, err := Load(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], "notes.json skipped") {
		t.Fatalf("warnings %q, want one about notes.json", in.Warnings)
	}
	o := in.Options
	o.SLO = analysis.SLO{TTFTP99: time.Second}
	r := in.Analyze(o)
	if !r.SLO.MaxConcurrency.OK() || r.SLO.Limit != "ttft_p99" {
		t.Errorf("slo %+v, want a point bound by ttft_p99; warnings %q", r.SLO, r.Warnings)
	}
	n := 0
	for _, w := range r.Warnings {
		if strings.Contains(w, "notes.json") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings about notes.json in %q, want 1", n, r.Warnings)
	}
	if r := in.Analyze(in.Options); r.SLO.Checked == nil || r.SLO.Checked[0] != "ttft_p99" {
		t.Errorf("default SLOs: checked %q, want ttft_p95 checked as ttft_p99", r.SLO.Checked)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
