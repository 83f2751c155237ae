package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/summary"
)

// `analyze levels.csv -o out/` on a plateauing curve (testdata/analyze/plateau.csv, the
// simulator's ground truth with S = 16) writes analysis.json with the DESIGN §4 keys, a knee
// and a USL fit, and summary.csv that reads back.
func TestAnalyzeCSV(t *testing.T) {
	t.Parallel()
	e, stdout, stderr := analyzeEnv()
	out := filepath.Join(t.TempDir(), "out")
	err := run(context.Background(), e, []string{"analyze", filepath.Join("testdata", "analyze", "plateau.csv"), "-o", out, "--bootstrap", "100"})
	if err != nil {
		t.Fatalf("analyze: %v\nstderr: %s", err, stderr)
	}
	m := readJSON(t, filepath.Join(out, "analysis.json"))
	if m["schema"] != analysis.Schema {
		t.Errorf("schema %v", m["schema"])
	}
	for _, keys := range [][]string{
		{"throughput", "max_tps"}, {"throughput", "max_tps_concurrency"},
		{"throughput", "usl", "sigma"}, {"throughput", "usl", "kappa"}, {"throughput", "usl", "lambda"}, {"throughput", "usl", "r2"},
		{"throughput", "usl", "peak_concurrency"}, {"throughput", "usl", "peak_tps"},
		{"throughput", "hinge", "breakpoint"}, {"throughput", "hinge", "plateau_tps"}, {"throughput", "hinge", "r2"},
		{"throughput", "kneedle", "knee"},
		{"knee", "concurrency"}, {"knee", "tps"}, {"knee", "method"}, {"knee", "interval"}, {"knee", "rule"},
		{"efficient_point", "concurrency"}, {"efficient_point", "interval"}, {"efficient_point", "gain"},
		{"ttft_blowup", "concurrency"}, {"ttft_blowup", "method"},
		{"overload", "detected"}, {"overload", "from_concurrency"}, {"overload", "drop_pct"},
		{"operating_point", "concurrency"}, {"operating_point", "tps"},
		{"slo", "ttft_p95_ms"}, {"slo", "tpot_p95_ms"}, {"slo", "max_concurrency"}, {"slo", "tps"}, {"slo", "goodput_qps"},
		{"capacity"}, {"warnings"},
	} {
		if _, ok := dig(m, keys...); !ok {
			t.Errorf("analysis.json lacks %s", strings.Join(keys, "."))
		}
	}
	levels, _ := m["levels"].([]any)
	if len(levels) != 8 {
		t.Fatalf("%d levels, want 8", len(levels))
	}
	for _, k := range []string{"concurrency", "requests", "errors", "error_rate", "output_tps", "output_tps_ci95", "qps", "input_tps",
		"achieved_concurrency", "littles_law_error", "steady", "valid", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"} {
		if _, ok := levels[0].(map[string]any)[k]; !ok {
			t.Errorf("levels[0] lacks %s", k)
		}
	}
	if p50, _ := dig(m, "levels"); p50 == nil {
		t.Error("no levels")
	}
	knee, _ := dig(m, "knee", "concurrency")
	kc, ok := knee.(float64)
	if !ok || kc < 10 || kc > 20 {
		t.Errorf("knee concurrency %v, want within ±25%% of S = 16; warnings %v", knee, m["warnings"])
	}
	if v, _ := dig(m, "throughput", "usl"); v == nil {
		t.Error("throughput.usl is null")
	}
	// summary.csv round-trips.
	f, err := os.Open(filepath.Join(out, "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := summary.ReadCSV(f, "summary.csv")
	if err != nil || len(back) != 8 || back[4].OutputTPS != 2000 {
		t.Errorf("summary.csv: %v, %d levels", err, len(back))
	}
	if stdout.Len() == 0 {
		t.Error("no console summary")
	}
}

func TestAnalyzeUsageErrors(t *testing.T) {
	td := filepath.Join("testdata", "analyze")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown column", []string{filepath.Join(td, "unknown_column.csv"), "-o", "OUT"}, []string{"unknown_column.csv:1", `"gpu_temp"`}},
		{"non-numeric", []string{filepath.Join(td, "non_numeric.csv"), "-o", "OUT"}, []string{"non_numeric.csv:4", `"output_tps"`, "not a number"}},
		{"concurrency zero", []string{filepath.Join(td, "zero_concurrency.csv"), "-o", "OUT"}, []string{"zero_concurrency.csv:3", `"concurrency"`}},
		{"missing path", []string{filepath.Join(td, "nope.csv"), "-o", "OUT"}, []string{"nope.csv", "no such file"}},
		{"no path", nil, []string{"want one PATH"}},
		{"csv without -o", []string{filepath.Join(td, "plateau.csv")}, []string{"-o DIR is required"}},
		{"bad knee gain", []string{filepath.Join(td, "plateau.csv"), "--knee-gain", "2", "-o", "OUT"}, []string{"knee-gain"}},
		{"knee gain NaN", []string{filepath.Join(td, "plateau.csv"), "--knee-gain", "NaN", "-o", "OUT"}, []string{"--knee-gain NaN"}},
		{"a billion resamples", []string{filepath.Join(td, "plateau.csv"), "--bootstrap", "1000000000", "-o", "OUT"}, []string{"--bootstrap 1000000000: at most 100000"}},
		{"bad flag", []string{"--frobnicate"}, []string{"frobnicate"}},
		{"empty dir", []string{td + "/../analyze_empty_dir_missing"}, []string{"no such file"}},
	}
	for _, tt := range tests {
		e, _, _ := analyzeEnv()
		for i, a := range tt.args {
			if a == "OUT" {
				tt.args[i] = t.TempDir()
			}
		}
		err := run(context.Background(), e, append([]string{"analyze"}, tt.args...))
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%s: exit %d (%v), want %d", tt.name, code, err, exitUsage)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
}

// A directory of vLLM bench serve results (testdata/vllm: the key set of vLLM's --save-result
// JSON, one file per --max-concurrency 1…32, generated from the simulator's ground truth with
// S = 8; the 32-user file lists one failed request).
func TestAnalyzeVLLMDir(t *testing.T) {
	t.Parallel()
	e, _, stderr := analyzeEnv()
	out := t.TempDir()
	if err := run(context.Background(), e, []string{"analyze", filepath.Join("testdata", "vllm"), "-o", out, "--bootstrap", "50"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	m := readJSON(t, filepath.Join(out, "analysis.json"))
	if model, _ := dig(m, "meta", "model"); model != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Errorf("meta.model = %v", model)
	}
	if k, _ := dig(m, "knee", "concurrency"); k == nil {
		t.Errorf("no knee; warnings %v", m["warnings"])
	}
}

// analyzeCSV writes body as a level-summary CSV, analyzes it into a directory of its own with
// --bootstrap 0 and args, and returns its analysis.json, the CSV's and the directory's paths
// and the console.
func analyzeCSV(t *testing.T, body string, args ...string) (m map[string]any, csv, out string, stdout *bytes.Buffer) {
	t.Helper()
	csv = filepath.Join(t.TempDir(), "levels.csv")
	if err := os.WriteFile(csv, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(t.TempDir(), "out")
	e, stdout, stderr := analyzeEnv()
	if err := run(context.Background(), e, append([]string{"analyze", csv, "-o", out, "--bootstrap", "0"}, args...)); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	return readJSON(t, filepath.Join(out, "analysis.json")), csv, out, stdout
}

// --energy-cost-per-kwh prices the plan's energy (DESIGN §4.16) from a level-summary CSV with
// the GPU columns. Reference: arithmetic on the CSV below: the SLO holds to 64 and fails at
// 128, both levels at 0.35 J per output token (700 W ÷ 2000 tokens/s), so the SLO point's is
// 0.35 J: 0.35 × 10⁶ ÷ 3.6·10⁶ = 0.0972 kWh per 1M output tokens, $0.00972 at $0.10 per kWh.
func TestAnalyzeEnergyCostFlag(t *testing.T) {
	t.Parallel()
	body := "concurrency,output_tps,qps,ttft_p95_ms,gpu_power_mean_w,j_per_output_token\n" +
		"1,100,1,20,150,1.5\n4,380,3.8,22,250,0.6578947368421053\n16,1300,13,30,500,0.38461538461538464\n" +
		"64,2000,20,900,700,0.35\n128,2000,20,3000,700,0.35\n"
	m, csv, out, _ := analyzeCSV(t, body, "--plan-users", "1000", "--energy-cost-per-kwh", "0.1")
	kwh, _ := dig(m, "capacity", "kwh_per_m_output_tokens")
	cost, _ := dig(m, "capacity", "energy_cost_per_m_output_tokens")
	power, _ := dig(m, "capacity", "power_per_replica_w")
	k, _ := kwh.(float64)
	c, _ := cost.(float64)
	if math.Abs(k-0.35/3.6) > 1e-9 || math.Abs(c-0.035/3.6) > 1e-9 || power != 700.0 {
		t.Errorf("capacity: %v kWh, $%v per 1M output tokens, %v W per replica; want 0.0972, 0.00972, 700", kwh, cost, power)
	}
	e, _, _ := analyzeEnv()
	err := run(context.Background(), e, []string{"analyze", csv, "-o", out, "--energy-cost-per-kwh", "-1"})
	if exitCode(err) != exitUsage || !strings.Contains(errString(err), "energy-cost-per-kwh") {
		t.Errorf("--energy-cost-per-kwh -1: exit %d (%v), want %d naming the flag", exitCode(err), err, exitUsage)
	}
}

// The --plan flags give a capacity plan without a new sweep. Reference: arithmetic on
// the CSV below: the SLO (TTFT p95 ≤ 2 s) holds to 64 (QPS 20, the last passing level) and
// fails at 128, so the point lies at or below 128; 1,000 users need ⌈1000 ÷ N_slo⌉ replicas
// with N_slo in [64, 128): 8 to 16; 8 GPUs each; $2.50 per replica-hour.
func TestAnalyzePlanFlags(t *testing.T) {
	t.Parallel()
	body := "concurrency,output_tps,qps,ttft_p95_ms\n1,100,1,20\n4,380,3.8,22\n16,1300,13,30\n64,2000,20,900\n128,2000,20,3000\n"
	m, csv, out, stdout := analyzeCSV(t, body, "--plan-users", "1000", "--replica-cost-per-hour", "2.5", "--gpus-per-replica", "8")
	nslo, _ := dig(m, "slo", "max_concurrency")
	reps, _ := dig(m, "capacity", "replicas_at_slo")
	gpus, _ := dig(m, "capacity", "gpus")
	cost, _ := dig(m, "capacity", "cost_per_hour")
	n, _ := nslo.(float64)
	r, _ := reps.(float64)
	if !(n >= 64 && n < 128) || r != math.Ceil(1000/n) || gpus != 8*r || cost != 2.5*r {
		t.Errorf("SLO point %v: replicas %v, GPUs %v, $/h %v; want ⌈1000 ÷ %v⌉, 8 GPUs and $2.50 each", nslo, reps, gpus, cost, nslo)
	}
	if u, _ := dig(m, "capacity", "concurrent_users"); u != 1000.0 {
		t.Errorf("capacity.concurrent_users %v, want 1000", u)
	}
	if !strings.Contains(stdout.String(), "Capacity plan for 1000 concurrent users") {
		t.Errorf("console lacks the plan:\n%s", stdout)
	}
	for _, bad := range [][]string{{"--plan-qps", "-1"}, {"--plan-users", "-5"}, {"--replica-cost-per-hour", "NaN"}} {
		e, _, _ := analyzeEnv()
		err := run(context.Background(), e, append([]string{"analyze", csv, "-o", out}, bad...))
		// The config's plan validation, as sweep's: the flag, its key, "must be ≥ 0".
		if exitCode(err) != exitUsage || !strings.Contains(errString(err), bad[0]+": plan.") || !strings.Contains(errString(err), "must be ≥ 0") {
			t.Errorf("%v: exit %d (%v), want %d naming the flag and its key", bad, exitCode(err), err, exitUsage)
		}
	}
}
