package main

import (
	"context"
	"math"
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
	// The headline's capacity line, then the method text: the mode and the capacity's rule.
	if i, j := strings.Index(string(md), "- **Capacity:** 10.0 req/s"), strings.Index(string(md), "Open-loop arrival-rate sweep (mode rate). Capacity rule: "); i < 0 || j < i {
		t.Errorf("report.md does not open with the capacity, then the mode and the capacity's rule:\n%.600s", md)
	}
	if !strings.Contains(stdout.String(), "Open-loop arrival-rate sweep (mode rate)") {
		t.Errorf("console:\n%s", stdout)
	}
}

// TestAnalyzeRatePlateauCSV is the published open-loop table: eight rates with
// output TPS and mean TTFT only, TPS proportional to the rate up to the third (100 tokens a
// request) and flat at 350 tokens/s from the fourth, mean TTFT twentyfold from the third to
// the fourth (testdata/analyze/rate-plateau.csv). `kneecap analyze` reads the capacity from
// the plateau's onset: 350 ÷ 100 = 3.5 requests/s (± 0.05: the plateau rows are 348–352),
// inside [3, 4], its interval that onset interval — not the largest rate, 12 — with the rule
// named in analysis.json, the answer and the method table; the TTFT blow-up at the third
// rate.
func TestAnalyzeRatePlateauCSV(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	e, _, stderr := analyzeEnv()
	if err := run(context.Background(), e, []string{"analyze", filepath.Join("testdata", "analyze", "rate-plateau.csv"), "-o", out}); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	res := readJSON(t, filepath.Join(out, "analysis.json"))
	c, _ := dig(res, "rate", "capacity_rps")
	if c, ok := c.(float64); !ok || math.Abs(c-3.5) > 0.05 || c < 3 || c > 4 {
		t.Errorf("capacity_rps %v, want 3.5 ± 0.05 inside the onset [3, 4]", c)
	}
	iv, _ := dig(res, "rate", "capacity_interval")
	if b, _ := iv.([]any); len(b) != 2 || b[0] != 3.0 || b[1] != 4.0 {
		t.Errorf("capacity_interval %v, want the plateau's onset [3, 4]", iv)
	}
	if r, _ := dig(res, "rate", "capacity_rule"); r != "tps_plateau" {
		t.Errorf("capacity_rule %v, want tps_plateau", r)
	}
	if b, _ := dig(res, "rate", "capacity_bound"); b != nil {
		t.Errorf("capacity_bound %v, want none (an estimate, not a bound)", b)
	}
	// The blow-up as before the plateau rule: the ramp of mean TTFT starts at the third rate
	// (within RefineTolerance, 5%) and is under way by the fourth.
	if b, _ := dig(res, "rate", "ttft_blowup_rps"); !(b.(float64) >= 3/1.05 && b.(float64) <= 4) {
		t.Errorf("ttft_blowup_rps %v, want between 3 ÷ 1.05 and 4", b)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	for _, w := range []string{"Capacity rule: plateau of output TPS over the offered rate (no achieved rates in the table)",
		"| capacity from a table's plateau |"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
}

// TestCompareRefusesMixedModes: a closed-loop run and an arrival-rate run are a usage error
// (exit 2) naming both and their modes, before anything is written.
func TestCompareRefusesMixedModes(t *testing.T) {
	t.Parallel()
	r := analysistest.Rate()
	r.Meta.Name = "open"
	compareRefused(t, compareRun("closed", 32, 2667, 32), r,
		"compare: runs of different modes: closed is a closed-loop concurrency sweep (mode concurrency), open an open-loop arrival-rate sweep (mode rate); compare runs of one mode")
}
