package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/record"
)

// compareRun is a hand-made analysis of an 8-level sweep 1…128 whose throughput saturates at
// slots concurrent requests at plateau tokens/s.
func compareRun(name string, slots int, plateau float64, knee analysis.Float) *analysis.Result {
	r := &analysis.Result{
		Schema: analysis.Schema,
		Meta:   analysis.Meta{Name: name, Model: "m", Endpoint: "http://127.0.0.1:1/v1", Date: "2025-03-14T09:26:53Z"},
		SLO: analysis.SLOResult{TTFTP95MS: 2000, TPOTP95MS: 50, E2EP95MS: analysis.NaN(), MaxConcurrency: 2 * knee,
			TPS: analysis.Float(plateau), GoodputQPS: analysis.Float(plateau / 128), Limit: "ttft_p95"},
		Knee: &analysis.Knee{Concurrency: knee, TPS: analysis.Float(0.9 * plateau), Method: "usl",
			Interval: [2]analysis.Float{knee * 0.8, knee * 1.25}},
		TTFTBlowup: &analysis.Blowup{Concurrency: analysis.Float(slots), Method: "hinge", BaselineMS: 20, SlopeMSPerUser: 40},
		Overload:   analysis.Overload{FromConcurrency: analysis.NaN(), DropPct: analysis.NaN()},
		Warnings:   []string{name + ": knee methods disagree"},
	}
	for c := 1; c <= 128; c *= 2 {
		n := float64(min(c, slots))
		tps := plateau * n / float64(slots)
		ttft := 20.0
		if c > slots {
			ttft += 40 * float64(c-slots)
		}
		l := func(v float64) analysis.Latency {
			f := analysis.Float(v)
			return analysis.Latency{Mean: f, P50: f, P90: f * 1.2, P95: f * 1.3, P99: f * 1.5}
		}
		r.Levels = append(r.Levels, analysis.Level{Concurrency: c, Requests: 100, OutputTPS: analysis.Float(tps),
			OutputTPSCI95: analysis.Float(0.02 * tps), QPS: analysis.Float(tps / 128), Valid: true, Steady: true,
			TTFT: l(ttft), TPOT: l(10), ITL: l(10), E2E: l(ttft + 1270), AchievedConcurrency: analysis.Float(c),
			LittlesLawError: 0.01, MeanOutputTokens: 128, ErrorRate: 0})
		if tps > float64(r.Throughput.MaxTPS) {
			r.Throughput.MaxTPS, r.Throughput.MaxTPSConcurrency = analysis.Float(tps), c
		}
	}
	return r
}

func writeRun(t *testing.T, dir string, r *analysis.Result) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "analysis.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func compareEnv() (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, interrupt: context.Background()}, &out, &errb
}

func TestCompareWritesOverlaysAndTable(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "h100"), filepath.Join(tmp, "runs", "a100-run")
	writeRun(t, a, compareRun("h100", 64, 5000, 45.2))
	rb := compareRun("", 16, 1800, 11.3)
	writeRun(t, b, rb)
	out := filepath.Join(tmp, "cmp")
	e, stdout, _ := compareEnv()
	if err := run(context.Background(), e, []string{"compare", a, b, "-o", out}); err != nil {
		t.Fatalf("compare: %v", err)
	}
	for _, f := range []string{"compare_throughput.png", "compare_throughput.svg", "compare_latency.png", "compare_latency.svg", "compare.md"} {
		fi, err := os.Stat(filepath.Join(out, f))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	pngFile, err := os.Open(filepath.Join(out, "compare_throughput.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer pngFile.Close()
	if _, err := png.Decode(pngFile); err != nil {
		t.Errorf("compare_throughput.png: %v", err)
	}
	svg, err := os.ReadFile(filepath.Join(out, "compare_latency.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"h100 E2E p95", "a100-run TTFT p95"} { // second label from the directory name
		if !bytes.Contains(svg, []byte(label)) {
			t.Errorf("compare_latency.svg lacks the legend entry %q", label)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	// knee (interval, method), knee TPS, efficient point (none in these hand-made runs), max
	// TPS @ N, SLO point, TTFT blow-up, per run; the interval of the second run is 11.3 ×
	// [0.8, 1.25] = [9.04, 14.1].
	for _, want := range []string{
		"| h100 | m | 45.2 (36.2–56.5, USL) | 4500 | — | 5000 @ 64 | 90.4 | 5000 | TTFT p95 | 64 (hinge) | 1 |",
		"| a100-run | m | 11.3 (9.04–14.1, USL) | 1620 | — | 1800 @ 16 | 22.6 | 1800 | TTFT p95 | 16 (hinge) | 1 |",
		"![compare throughput](compare_throughput.png)", "![compare latency](compare_latency.png)",
		"h100: knee methods disagree",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md)
		}
	}
	// The default columns fit 80: run, knee N, knee TPS, max TPS, SLO N, SLO TPS, binds, …
	for _, want := range []string{"h100      45.2    4500      5000     90.4   5000     TTFT p95", "a100-run  11.3    1620"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	e, stdout, _ = compareEnv()
	if err := run(context.Background(), e, []string{"compare", a, b, "-o", filepath.Join(tmp, "wide"), "--wide"}); err != nil {
		t.Fatalf("compare --wide: %v", err)
	}
	for _, want := range []string{"h100", "a100-run", "45.2 (36.2–56.5, USL)", "5000 @ 64", "11.3 (9.04–14.1, USL)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout (--wide) lacks %q:\n%s", want, stdout)
		}
	}
}

// TestCompareHelp: `kneecap compare -h` had no description; it now says what the command reads
// and writes, and -h is not an error.
func TestCompareHelp(t *testing.T) {
	e, _, stderr := compareEnv()
	if err := run(context.Background(), e, []string{"compare", "-h"}); exitCode(err) != exitOK {
		t.Fatalf("compare -h: %v", err)
	}
	for _, want := range []string{"Usage: kneecap compare RUN... -o DIR [--max-regression PCT]\n\nCompares two or more analyzed runs",
		"analysis.json", "DIR/compare.md", "compare_throughput", "compare_latency", "PNG and SVG", "-o DIR"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("compare -h lacks %q:\n%s", want, stderr)
		}
	}
}

func TestCompareUsageErrors(t *testing.T) {
	tmp := t.TempDir()
	good := filepath.Join(tmp, "good")
	writeRun(t, good, compareRun("good", 32, 3000, 22))
	empty := filepath.Join(tmp, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(tmp, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "analysis.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	for _, tc := range []struct {
		name string
		args []string
		want string // in the error
	}{
		{"one run", []string{"compare", good, "-o", out}, "at least 2 runs"},
		{"no runs", []string{"compare", "-o", out}, "at least 2 runs"},
		{"not a results directory", []string{"compare", good, empty, "-o", out}, empty + " is not a results directory (it has no levels.json or analysis.json)"},
		{"missing dir", []string{"compare", good, filepath.Join(tmp, "nope"), "-o", out}, filepath.Join(tmp, "nope")},
		{"bad json", []string{"compare", good, bad, "-o", out}, filepath.Join(bad, "analysis.json")},
		{"no -o", []string{"compare", good, good}, "-o DIR is required"},
		{"bad gate", []string{"compare", good, good, "-o", out, "--max-regression", "150%"}, "--max-regression: \"150%\""},
		{"gate not a number", []string{"compare", good, good, "-o", out, "--max-regression", "ten"}, "want a fraction"},
		{"gate empty", []string{"compare", good, good, "-o", out, "--max-regression", ""}, "want a fraction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := compareEnv()
			err := run(context.Background(), e, tc.args)
			if code := exitCode(err); code != exitUsage {
				t.Fatalf("exit code %d (%v), want %d", code, err, exitUsage)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed compare created the output directory")
	}
}

// TestCompareRegressionGate: with --max-regression the first run is the baseline, and a
// later run whose headline figures fall further exits 1 naming them, after writing
// everything; within the allowed fall it exits 0. Reference: compareRun's figures (max TPS =
// plateau, knee TPS 0.9 × plateau, SLO point 2 × knee, TTFT blow-up at slots).
func TestCompareRegressionGate(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	base, slower := filepath.Join(tmp, "h100"), filepath.Join(tmp, "h100-new-driver")
	writeRun(t, base, compareRun("h100", 32, 3000, 22))
	// 12% less throughput (3000 → 2640), the knee and the blow-up unchanged.
	writeRun(t, slower, compareRun("h100-new-driver", 32, 2640, 22))

	out := filepath.Join(tmp, "gate")
	e, stdout, _ := compareEnv()
	err := run(context.Background(), e, []string{"compare", base, slower, "-o", out, "--max-regression", "10%"})
	if exitCode(err) != exitRegressed {
		t.Fatalf("exit %d (%v), want %d", exitCode(err), err, exitRegressed)
	}
	for _, want := range []string{"max_tps 3000 → 2640 (-12.0%)", "knee_tps", "slo_tps", "against h100"} {
		if !strings.Contains(errString(err), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for _, notWant := range []string{"knee_concurrency", "ttft_blowup_concurrency", "slo_concurrency"} {
		if strings.Contains(errString(err), notWant) {
			t.Errorf("error %q names %s, which did not fall", err, notWant)
		}
	}
	md, rerr := os.ReadFile(filepath.Join(out, "compare.md"))
	if rerr != nil {
		t.Fatalf("compare.md not written before the gate failed: %v", rerr)
	}
	if !strings.Contains(string(md), "## Regression gate") || !strings.Contains(string(md), "regressed ✗") {
		t.Errorf("compare.md lacks the gate table")
	}
	if !strings.Contains(stdout.String(), "regression gate: each run against h100, allowed fall 10.0%") {
		t.Errorf("console lacks the gate:\n%s", stdout)
	}
	var gj struct {
		Baseline    string `json:"baseline"`
		Regressions int    `json:"regressions"`
		Runs        []struct {
			Run    string `json:"run"`
			Checks []struct {
				Metric, Verdict string
			} `json:"checks"`
		} `json:"runs"`
	}
	if b, err := os.ReadFile(filepath.Join(out, "compare.json")); err != nil || json.Unmarshal(b, &gj) != nil {
		t.Fatalf("compare.json: %v", err)
	}
	if gj.Baseline != "h100" || gj.Regressions != 4 || len(gj.Runs) != 1 || gj.Runs[0].Run != "h100-new-driver" || len(gj.Runs[0].Checks) != 7 {
		t.Errorf("compare.json %+v; want baseline h100, 4 regressions (max TPS, knee TPS, SLO TPS and goodput), 7 checks of one run", gj)
	}
	for _, f := range []string{"compare_throughput.png", "compare_latency.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}

	// A 15% allowance passes, and so does a run without the gate.
	for _, args := range [][]string{{"--max-regression", "0.15"}, nil} {
		e, _, _ := compareEnv()
		if err := run(context.Background(), e, append([]string{"compare", base, slower, "-o", out}, args...)); err != nil {
			t.Errorf("compare %v: %v, want exit 0", args, err)
		}
	}
}

// TestCompareEnergyPerRun: kneecap compare of two runs with GPU telemetry, as on two GPU types
// (the energy fixture, and a copy at 0.15 J/token at its lowest), prints each run's J/token on
// stdout and in compare.md, read back from their analysis.json.
func TestCompareEnergyPerRun(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "h100"), filepath.Join(tmp, "b200")
	writeRun(t, a, analysistest.WithEnergy())
	rb := analysistest.WithEnergy()
	rb.Meta.Name = "b200"
	rb.Energy.Optimal.X, rb.Energy.Optimal.JPerOutputToken, rb.Energy.AtSLOPoint.JPerOutputToken = 16, 0.15, 0.2
	writeRun(t, b, rb)
	out := filepath.Join(tmp, "cmp")
	e, stdout, _ := compareEnv()
	if err := run(context.Background(), e, []string{"compare", a, b, "-o", out}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	for what, doc := range map[string]string{"stdout": stdout.String(), "compare.md": string(md)} {
		for _, want := range []string{"llama8b-sim", "0.196", "10.3", "0.263", "b200", "0.15", "0.2"} {
			if !strings.Contains(doc, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, doc)
			}
		}
	}
	if !strings.Contains(stdout.String(), "J/tok min") || !strings.Contains(string(md), "| 0.15 @ 16 (8.90–12.1) | 0.2 |") {
		t.Errorf("no J/token per run:\n%s\n%s", stdout.String(), md)
	}
}

// TestCompareRefusesMixedYardsticks: an embeddings run beside a chat run is a usage error
// (exit 2) naming both, before anything is written: input tokens/s and output tokens/s are
// not drawn on one axis or gated against each other.
func TestCompareRefusesMixedYardsticks(t *testing.T) {
	t.Parallel()
	r := compareRun("emb", 32, 2667, 32)
	r.Meta.API = record.APIEmbeddings
	compareRefused(t, compareRun("chat", 32, 2667, 32), r,
		"compare: runs measured by different yardsticks: chat is a token-stream run (api chat: output tokens/s and TTFT), emb an embeddings run")
}

// compareRefused writes runs a and b (their directories named by their meta.name) and checks
// that compare refuses them with a usage error (exit 2) containing want, writing nothing.
func compareRefused(t *testing.T, a, b *analysis.Result, want string) {
	t.Helper()
	tmp := t.TempDir()
	da, db := filepath.Join(tmp, a.Meta.Name), filepath.Join(tmp, b.Meta.Name)
	writeRun(t, da, a)
	writeRun(t, db, b)
	out := filepath.Join(tmp, "cmp")
	e, _, _ := compareEnv()
	err := run(context.Background(), e, []string{"compare", da, db, "-o", out})
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
	}
	if msg := errString(err); !strings.Contains(msg, want) {
		t.Errorf("error %q, want one containing %q", msg, want)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused compare left %s behind", out)
	}
}
