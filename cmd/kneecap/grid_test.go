package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/plots"
)

// gridBase is the configuration every scenario of the grid test shares: the simulator with
// S = 4 decode slots (max_num_seqs) and a step of 2 ms + 20 µs per running sequence, prefill
// at 2,000,000 tokens/s (a 256-token prompt: 0.13 ms, next to a 2 ms step), levels 1, 2, 4, 8
// with short windows and the steady-state target loosened to 25% (the engine is steady by
// construction; what varies is the loaded machine's scheduling). Its knee is the batch fit's
// slot limit S (DESIGN §6: TPS(c) = c ÷ t(c) up to S, flat beyond) whatever the shape.
const gridBase = `simulator:
  profile: demo
  max_num_seqs: 4
  step_base: 2ms
  step_per_seq: 20us
  prefill_tps: 2000000
  seed: 1
workload:
  input_tokens: {dist: fixed, mean: %d}
  output_tokens: {dist: fixed, mean: %d}
sweep:
  levels: [1, 2, 4, 8]
  warmup: 50ms
  duration: 200ms
  min_requests: 4
  max_duration: 300ms
  ci_target: 0.25
  drain_timeout: 5s
  stop: {plateau: false, overload: false}
`

// gridShapes are the grid test's three shapes (prompt / output tokens).
var gridShapes = []struct {
	name    string
	in, out int
}{{"short", 64, 8}, {"long-in", 512, 8}, {"long-out", 16, 16}}

// TestScenarioGrid is issue 15's acceptance of the scenario grid: a 3-scenario grid against
// the simulator writes the combined report with the Pareto chart (PNG and SVG) and a table of
// knees, and each scenario's knee matches a single-scenario sweep of the same shape within
// 5%: the long-out scenario's that of a standalone sweep of its shape (run beside the grid),
// all three the engine's slot limit S = 4 within 5% (the truth of gridBase). The grid is made
// in two runs: the first interrupted before its first level (exit 130: the first scenario
// interrupted, the others not run, the combined files written anyway), the second
// `--resume DIR`, which resumes that scenario and runs the other two; a third `--resume DIR`
// skips all three (finished). Then `analyze DIR` rewrites the combined files and
// `compare DIR DIR2` (DIR2 a copy without one scenario) compares scenario by scenario.
func TestScenarioGrid(t *testing.T) {
	// Not parallel: no other test runs while it lowers the PNGs' density (restored after);
	// at 12 dpi a scenario's analysis and charts take 0.3 s under -race instead of 3 s (the
	// plots tests check the PNGs themselves).
	defer func(dpi int) { plots.PNGDPI = dpi }(plots.PNGDPI)
	plots.PNGDPI = 12
	base := t.TempDir()
	var grid strings.Builder
	fmt.Fprintf(&grid, "name: g\n"+gridBase+"scenarios:\n", 16, 16)
	for _, s := range gridShapes {
		fmt.Fprintf(&grid, "  - {name: %s, input_tokens: {mean: %d}, output_tokens: {mean: %d}}\n", s.name, s.in, s.out)
	}
	gridCfg := filepath.Join(base, "grid.yaml")
	single := filepath.Join(base, "single.yaml")
	lo := gridShapes[2]
	if err := os.WriteFile(gridCfg, []byte(grid.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(single, []byte(fmt.Sprintf("name: single\n"+gridBase, lo.in, lo.out)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, singleDir := filepath.Join(base, "grid"), filepath.Join(base, "single")
	start := time.Now()
	singleDone := make(chan cmdRun, 1)
	go func() { singleDone <- runCmd(nil, "sweep", "-c", single, "-o", singleDir) }()

	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	r := runCmd(func(e *env) { e.interrupt = interrupted }, "sweep", "-c", gridCfg, "-o", dir)
	if exitCode(r.err) != exitInterrupted {
		t.Fatalf("interrupted grid: exit %d (%v), want 130\n%s", exitCode(r.err), r.err, r.stderr)
	}
	doc := readGrid(t, dir)
	if st := []string{doc.Scenarios[0].Status, doc.Scenarios[1].Status}; st[0] != gridInterrupted || st[1] != gridNotRun {
		t.Errorf("after the interrupt: statuses %v, want interrupted, not run", st)
	}
	r = runCmd(nil, "sweep", "--resume", dir)
	if r.err != nil {
		t.Fatalf("resumed grid: %v\n%s", r.err, r.stderr)
	}
	t.Logf("grid (interrupted, then resumed) took %s", time.Since(start).Round(time.Millisecond))
	checkGridFiles(t, dir, r.stdout)
	s := <-singleDone
	if s.err != nil {
		t.Fatalf("single sweep: %v\n%s", s.err, s.stderr)
	}
	t.Logf("grid and the single sweep beside it took %s", time.Since(start).Round(time.Millisecond))
	defer func() { t.Logf("the whole test took %s", time.Since(start).Round(time.Millisecond)) }()
	for _, l := range strings.Split(r.stderr+s.stderr, "\n") {
		if strings.Contains(l, "stopped after") || strings.Contains(l, "kneecap: scenario ") {
			t.Log(l)
		}
	}
	r = runCmd(nil, "sweep", "--resume", dir)
	if r.err != nil || strings.Count(r.stderr, "finished before: skipped") != 3 {
		t.Errorf("third --resume: %v, want every scenario skipped:\n%s", r.err, r.stderr)
	}
	r = runCmd(nil, "analyze", dir)
	if r.err != nil || !strings.Contains(r.stdout, "scenario  shape") {
		t.Errorf("analyze grid: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	checkGridCompare(t, base, dir)
	checkGridKnees(t, readGrid(t, dir), singleDir) // last: it skips when the machine starved the client
}

// readGrid reads dir/scenarios.json.
func readGrid(t *testing.T, dir string) gridDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, scenariosFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc gridDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Schema != gridSchema || len(doc.Scenarios) != len(gridShapes) {
		t.Fatalf("scenarios.json: %v, %+v", err, doc)
	}
	return doc
}

// checkGridFiles checks the grid's own files, each scenario's complete results directory and
// the table of knees on stdout (≤ 80 columns).
func checkGridFiles(t *testing.T, dir, stdout string) {
	t.Helper()
	for _, f := range []string{"config.yaml", scenariosFile, "report.md", "report.html", "pareto.png", "pareto.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("grid file %s: %v", f, err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, s := range gridShapes {
		for _, f := range []string{"levels.json", "records.jsonl", "analysis.json", "report.html", "throughput.svg"} {
			if _, err := os.Stat(filepath.Join(dir, s.name, f)); err != nil {
				t.Errorf("scenario %s: %v", s.name, err)
			}
		}
		if !strings.Contains(string(html), `href="`+s.name+`/report.html"`) || !strings.Contains(string(md), "("+s.name+"/report.md)") {
			t.Errorf("combined report lacks the link to %s's report", s.name)
		}
	}
	if !strings.Contains(string(html), "<svg") || strings.Contains(string(html), "<script") || !strings.Contains(string(md), "pareto.png") {
		t.Error("combined report: the Pareto chart is not inlined (HTML) or linked (Markdown), or the page has a script")
	}
	i := strings.Index(stdout, "kneecap scenario grid g:")
	if i < 0 {
		t.Fatalf("no table of knees on stdout:\n%s", stdout)
	}
	table := strings.Split(strings.TrimSpace(stdout[i:]), "\n")
	if strings.Join(strings.Fields(table[1]), " ") != "scenario shape knee N knee TPS SLO N max TPS blow-up N status" {
		t.Errorf("table header %q", table[1])
	}
	for j, s := range gridShapes {
		row := table[2+j]
		if !strings.HasPrefix(row, s.name+" ") || !strings.Contains(row, fmt.Sprintf("%d/%d", s.in, s.out)) || !strings.HasSuffix(row, gridFinished) {
			t.Errorf("table row %q, want %s %d/%d … finished", row, s.name, s.in, s.out)
		}
	}
	for _, l := range table {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("table line of %d columns: %q", n, l)
		}
	}
}

// checkGridKnees checks each scenario's knee against the truth S = 4 and the long-out
// scenario's against the standalone sweep of its shape, within 5%; a miss on a machine that
// starved the client is inconclusive (starved, as the accuracy tests).
func checkGridKnees(t *testing.T, doc gridDoc, singleDir string) {
	t.Helper()
	const S, tol = 4.0, 0.05
	for i, sc := range doc.Scenarios {
		m := readJSON(t, filepath.Join(filepath.Dir(singleDir), "grid", sc.Name, "analysis.json"))
		if sc.Knee == nil || !sc.Knee.Concurrency.OK() || math.Abs(float64(sc.Knee.Concurrency)/S-1) > tol {
			if why := starved(m); why != "" {
				t.Skipf("scenario %s: knee %+v: inconclusive, %s (warnings %v)", sc.Name, sc.Knee, why, m["warnings"])
			}
			t.Fatalf("scenario %s: knee %+v, want S = %g within %.0f%% (warnings %v)", sc.Name, sc.Knee, S, 100*tol, m["warnings"])
		}
		t.Logf("scenario %s (%s): knee %.3f (%.1f%% of S), max TPS %.0f", sc.Name, sc.Shape, float64(sc.Knee.Concurrency),
			100*float64(sc.Knee.Concurrency)/S, float64(sc.MaxTPS))
		if i != 2 {
			continue
		}
		sm := readJSON(t, filepath.Join(singleDir, "analysis.json"))
		k, _ := dig(sm, "knee", "concurrency")
		kf, ok := k.(float64)
		if d := math.Abs(float64(sc.Knee.Concurrency)/kf - 1); !ok || d > tol {
			if why := starved(sm); why != "" {
				t.Skipf("single sweep: knee %v: inconclusive, %s", k, why)
			}
			t.Errorf("scenario %s knee %.3f, the standalone sweep of its shape %v: want within %.0f%%", sc.Name, float64(sc.Knee.Concurrency), k, 100*tol)
		} else {
			t.Logf("scenario %s knee %.3f, standalone %.3f: %.1f%% apart", sc.Name, float64(sc.Knee.Concurrency), kf, 100*d)
		}
	}
}

// checkGridCompare compares the grid with a copy of it that lacks its first scenario: the two
// others compared in OUT/NAME/, the combined comparison in OUT/, the missing one named.
func checkGridCompare(t *testing.T, base, dir string) {
	t.Helper()
	other := filepath.Join(base, "grid2")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	doc := readGrid(t, dir)
	doc.Scenarios = doc.Scenarios[1:]
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(other, scenariosFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc.Scenarios {
		if err := os.MkdirAll(filepath.Join(other, s.Name), 0o700); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(filepath.Join(dir, s.Name, "analysis.json"))
		if err := os.WriteFile(filepath.Join(other, s.Name, "analysis.json"), a, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(base, "cmp")
	r := runCmd(nil, "compare", dir, other, "-o", out)
	if r.err != nil {
		t.Fatalf("compare grids: %v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "scenario short is only in grid: not compared") || !strings.Contains(r.stdout, "long-out/grid2") {
		t.Errorf("compare grids: stdout\n%s\nstderr\n%s", r.stdout, r.stderr)
	}
	for _, f := range []string{"compare.md", "compare.html", "long-in/compare.md", "long-out/compare.html", "long-out/compare_throughput.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("compare: %v", err)
		}
	}
	if md, _ := os.ReadFile(filepath.Join(out, "compare.md")); !strings.Contains(string(md), "Scenarios not compared") {
		t.Error("compare.md does not name the scenario not compared")
	}
}
