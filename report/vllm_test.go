package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
)

// testdata/vllm holds vLLM bench serve result files (the key set of
// benchmarks/benchmark_serving.py's --save-result JSON, with --percentile-metrics
// ttft,tpot,itl,e2el and --metric-percentiles 95,99) generated from the simulator's ground
// truth with S = 8; the 32-user file lists one failed request in "errors".
func TestReadVLLMBench(t *testing.T) {
	levels, meta, err := ReadVLLMBench(filepath.Join("testdata", "vllm"))
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
	if _, _, err := ReadVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "no vLLM result") {
		t.Errorf("empty dir: %v", err)
	}
	bad := filepath.Join(dir, "a.json")
	os.WriteFile(bad, []byte(`{"max_concurrency": null, "output_throughput": 3}`), 0o644)
	if _, _, err := ReadVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "a.json") || !strings.Contains(err.Error(), "max_concurrency") {
		t.Errorf("null max_concurrency: %v", err)
	}
	os.WriteFile(bad, []byte(`{"max_concurrency": 4}`), 0o644)
	if _, _, err := ReadVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "output_throughput") {
		t.Errorf("no output_throughput: %v", err)
	}
	os.WriteFile(bad, []byte(`{"max_concurrency": 4, "output_throughput": 3}`), 0o644)
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"max_concurrency": 4, "output_throughput": 3}`), 0o644)
	if _, _, err := ReadVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("duplicate: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{not json`), 0o644)
	if _, _, err := ReadVLLMBench(dir); err == nil || !strings.Contains(err.Error(), "b.json") {
		t.Errorf("bad json: %v", err)
	}
	if _, _, err := ReadVLLMBench(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing dir: no error")
	}
}
