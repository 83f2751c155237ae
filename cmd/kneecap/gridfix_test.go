package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/grid"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/workload"
)

// TestGridFixtures checks, on a grid of written results directories (writeGroundTruthRun,
// no sweep): `analyze DIR` re-analyzes every scenario with its flags and rewrites the
// combined files; `sweep --resume DIR` refuses (exit 2, before anything is sent) scenarios
// whose configuration in DIR/config.yaml is not the one they ran with, naming them and the
// keys, and warns about a run directory that is no scenario; `compare A B` of two grids
// compares the scenarios both have and names the others, and with --max-regression a
// baseline scenario the candidate lacks fails the gate (exit 4, in compare.json and
// compare.md), a shape that differs warned about.
func TestGridFixtures(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "grid")
	cfg := config.Default()
	cfg.Name = "g"
	for _, n := range []string{"a", "b", "c"} {
		cfg.Scenarios = append(cfg.Scenarios, config.Scenario{Name: n})
	}
	for i, sc := range cfg.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		writeGroundTruthRun(t, sub, 4, []int{1, 2, 4, 8, 16})
		// config.yaml as if it ran with it (grid.Create writes it, and a scenarios.json that a
		// scenario's directory has not).
		if err := grid.Create(sub, cfg.ScenarioConfig(i)); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(sub, rundir.ScenariosFile)); err != nil {
			t.Fatal(err)
		}
	}
	in := 999.0
	cfg.Scenarios[0].InputTokens = &workload.Dist{Mean: in} // then changed in the grid's config.yaml
	if err := grid.Create(dir, cfg); err != nil {
		t.Fatal(err)
	}

	r := runCmd(nil, "analyze", dir, "--bootstrap", "0") // its flags reach every scenario
	if r.err != nil || !strings.Contains(r.stdout, "kneecap scenario grid g:") {
		t.Fatalf("analyze grid: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	doc := readGrid(t, dir)
	for _, sc := range doc.Scenarios {
		if sc.Status != grid.Finished || sc.Knee == nil || !sc.Knee.Concurrency.OK() || sc.Knee.Interval[0].OK() {
			t.Errorf("analyze --bootstrap 0: scenario %s: %s, knee %+v; want finished, a knee without an interval", sc.Name, sc.Status, sc.Knee)
		}
	}
	for _, f := range []string{"report.md", "report.html", "pareto.png", "pareto.svg", "a/analysis.json", "c/report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("after analyze: %v", err)
		}
	}

	// Scenario a ran with the base's input_tokens, not the 999 DIR/config.yaml gives it now.
	if err := os.MkdirAll(filepath.Join(dir, "old"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old", "levels.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCmd(nil, "sweep", "--resume", dir)
	if msg := errString(r.err); exitCode(r.err) != exitUsage || !strings.Contains(msg, "scenario a ran with another configuration") ||
		!strings.Contains(msg, ": workload.input_tokens.mean differ") || strings.Contains(msg, "scenario b") {
		t.Errorf("--resume of a changed scenario: exit %d, %v; want 2 naming scenario a and its key alone", exitCode(r.err), r.err)
	}
	if !strings.Contains(r.stderr, filepath.Join(dir, "old")+" holds a run but is no scenario") {
		t.Errorf("--resume: no warning about the stray run directory:\n%s", r.stderr)
	}

	other := copyGrid(t, dir, filepath.Join(base, "grid2"), "a")
	out := filepath.Join(base, "cmp")
	r = runCmd(nil, "compare", dir, other, "-o", out)
	if r.err != nil || !strings.Contains(r.stderr, "scenario a is only in grid: not compared") || !strings.Contains(r.stdout, "c/grid2") ||
		!strings.Contains(r.stderr, "warning: scenario b has shape") {
		t.Errorf("compare grids: %v\nstdout\n%s\nstderr\n%s", r.err, r.stdout, r.stderr)
	}
	for _, f := range []string{"compare.md", "compare.html", "b/compare.md", "c/compare.html", "c/compare_throughput.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("compare: %v", err)
		}
	}
	if md, _ := os.ReadFile(filepath.Join(out, "compare.md")); !strings.Contains(string(md), "Scenarios not compared") {
		t.Error("compare.md does not name the scenario not compared")
	}
	gated := filepath.Join(base, "gate")
	r = runCmd(nil, "compare", dir, other, "-o", gated, "--max-regression", "10%")
	if exitCode(r.err) != exitRegressed || !strings.Contains(errString(r.err), "scenario a is only in grid") {
		t.Errorf("gate with a baseline scenario missing: exit %d (%v), want 4 naming it", exitCode(r.err), r.err)
	}
	t.Logf("gate: %v\n%s", r.err, r.stderr)
	var cmp grid.Comparison
	b, err := os.ReadFile(filepath.Join(gated, "compare.json"))
	if err == nil {
		err = json.Unmarshal(b, &cmp)
	}
	if err != nil || cmp.Regressions != 1 || len(cmp.Missing) != 1 || !cmp.Missing[0].FailsGate || len(cmp.Scenarios) != 2 {
		t.Errorf("compare.json: %v, %+v; want 1 regression: scenario a missing, failing the gate; b and c compared", err, cmp)
	}
	if md, _ := os.ReadFile(filepath.Join(gated, "compare.md")); !strings.Contains(string(md), "scenario a is only in grid (fails the gate)") {
		t.Error("compare.md does not say that the missing scenario fails the gate")
	}
	gridNamesStayInside(t, base, dir, other)
}

// gridNamesStayInside: grids whose config.yaml or scenarios.json were edited (or came from
// someone else) to name a scenario "../victim" are refused by analyze and compare with exit
// 2 naming the file and the entry, and nothing is written outside the directories given.
func gridNamesStayInside(t *testing.T, base, dir, other string) {
	t.Helper()
	victim := filepath.Join(base, "victim") // ../victim from base/grid and from base/cmp2
	edit := func(path, from, to string) {
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), from) {
			t.Fatalf("%s: %v, or no %q in it", path, err, from)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), from, to, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(dir, rundir.ConfigFile)
	orig, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	edit(cfgFile, "name: b\n", "name: ../victim\n")
	r := runCmd(nil, "analyze", dir, "--bootstrap", "0")
	if msg := errString(r.err); exitCode(r.err) != exitUsage || !strings.Contains(msg, cfgFile+": scenario 2: \"../victim\"") {
		t.Errorf("analyze of a grid naming ../victim: exit %d, %v; want 2 naming config.yaml's scenario 2", exitCode(r.err), r.err)
	}
	if err := os.WriteFile(cfgFile, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	edit(filepath.Join(other, rundir.ScenariosFile), `"name":"b"`, `"name":"../victim"`)
	r = runCmd(nil, "compare", dir, other, "-o", filepath.Join(base, "cmp2"))
	if msg := errString(r.err); exitCode(r.err) != exitUsage || !strings.Contains(msg, "scenarios.json: scenario 1: \"../victim\"") {
		t.Errorf("compare with a grid naming ../victim: exit %d, %v; want 2 naming scenarios.json's scenario 1", exitCode(r.err), r.err)
	}
	if _, err := os.Stat(victim); !os.IsNotExist(err) {
		t.Errorf("%s was written: %v", victim, err)
	}
}

// copyGrid copies the grid in dir to to without scenario skip: its scenarios.json (the shape
// of the first kept scenario changed) and each kept scenario's analysis.json.
func copyGrid(t *testing.T, dir, to, skip string) string {
	t.Helper()
	doc := readGrid(t, dir)
	var kept []grid.Entry
	for _, s := range doc.Scenarios {
		if s.Name != skip {
			kept = append(kept, s)
		}
	}
	kept[0].Shape = "999/1"
	doc.Scenarios = kept
	for _, s := range kept {
		if err := os.MkdirAll(filepath.Join(to, s.Name), 0o700); err != nil {
			t.Fatal(err)
		}
		a, err := os.ReadFile(filepath.Join(dir, s.Name, "analysis.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, s.Name, "analysis.json"), a, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(to, rundir.ScenariosFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestWarnOverridden: a flag every scenario overrides is warned about, one no scenario
// overrides is not.
func TestWarnOverridden(t *testing.T) {
	e, _, stderr := testEnv()
	cfg := config.Default()
	in := 512
	cfg.Scenarios = []config.Scenario{{Name: "a", InputTokens: &workload.Dist{Mean: float64(in)}}, {Name: "b", InputTokens: &workload.Dist{Mean: 64}}}
	warnOverridden(e, &sweepFlags{set: map[string]bool{"input-tokens": true, "output-tokens": true}}, cfg)
	if w := stderr.String(); !strings.Contains(w, "--input-tokens applies to no scenario: every scenario sets its own input_tokens (a, b)") || strings.Contains(w, "output-tokens") {
		t.Errorf("warnings %q", w)
	}
}
