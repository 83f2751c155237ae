package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestAnalyzeRateCSV: `kneecap analyze table.csv` of a table with rate_rps analyzes its levels
// on the rate axis end to end: analysis.json has mode "rate", the capacity between the last
// sustained and the first unsustained rate (the completion rate 10 of the table's replica),
// the TTFT blow-up rate and the SLO point; summary.csv is a rate table; the charts are the
// rate charts; the report and the console name the mode in their first sentence.
func TestAnalyzeRateCSV(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	e, stdout, stderr := analyzeEnv()
	if err := run(context.Background(), e, []string{"analyze", filepath.Join("testdata", "analyze", "rate.csv"), "-o", out, "--plan-qps", "95"}); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	res := readJSON(t, filepath.Join(out, "analysis.json"))
	num := func(keys ...string) float64 {
		v, ok := dig(res, keys...)
		f, isNum := v.(float64)
		if !ok || !isNum {
			t.Fatalf("%v = %v, want a number", keys, v)
		}
		return f
	}
	if m, _ := dig(res, "mode"); m != "rate" {
		t.Errorf("mode %v, want rate", m)
	}
	if c := num("rate", "capacity_rps"); c != 10 {
		t.Errorf("capacity_rps %v, want 10", c)
	}
	if c := num("rate", "capacity_tps"); c != 1000 {
		t.Errorf("capacity_tps %v, want 1000", c)
	}
	if b := num("rate", "ttft_blowup_rps"); !(b >= 8 && b <= 12) {
		t.Errorf("ttft_blowup_rps %v, want between 8 and 12", b)
	}
	if s := num("rate", "slo_rps"); !(s > 8 && s <= 10) {
		t.Errorf("slo_rps %v, want in (8, 10]", s)
	}
	if r := num("capacity", "replicas_at_capacity"); r != 10 {
		t.Errorf("replicas_at_capacity %v, want ⌈95 ÷ 10⌉ = 10", r)
	}
	csv, err := os.ReadFile(filepath.Join(out, "summary.csv"))
	if err != nil || !strings.HasPrefix(string(csv), "rate_rps,output_tps,") {
		t.Errorf("summary.csv: %v, %.40q", err, csv)
	}
	for _, f := range []string{"rate_throughput.png", "rate_ttft.svg", "rate_e2e.png", "rate_lag.svg", "dashboard.png", "report.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "throughput.png")); err == nil {
		t.Error("a closed-loop throughput chart was written for an arrival-rate run")
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "Open-loop arrival-rate sweep (mode rate): the maximum sustainable rate (capacity) is 10.0 requests/s") {
		t.Errorf("report.md does not open with the mode and the capacity:\n%.600s", md)
	}
	if !strings.Contains(stdout.String(), "Open-loop arrival-rate sweep (mode rate)") {
		t.Errorf("console:\n%s", stdout)
	}
}

// TestCompareRefusesMixedModes: a closed-loop run and an arrival-rate run are a usage error
// (exit 2) naming both and their modes, before anything is written.
func TestCompareRefusesMixedModes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	closed, open := filepath.Join(tmp, "closed"), filepath.Join(tmp, "open")
	writeRun(t, closed, compareRun("closed", 32, 2667, 32))
	r := analysistest.Rate()
	r.Meta.Name = "open"
	writeRun(t, open, r)
	out := filepath.Join(tmp, "cmp")
	e, _, _ := compareEnv()
	err := run(context.Background(), e, []string{"compare", closed, open, "-o", out})
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
	}
	if msg := errString(err); !strings.Contains(msg, "compare: runs of different modes: closed is a closed-loop concurrency sweep (mode concurrency), open an open-loop arrival-rate sweep (mode rate); compare runs of one mode") {
		t.Errorf("error %q", msg)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused compare left %s behind", out)
	}
}
