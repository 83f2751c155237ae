package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/plots"
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
	defer func(dpi int) { plots.PNGDPI = dpi }(plots.PNGDPI)
	plots.PNGDPI = 12 // not parallel: see TestScenarioGrid
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
		if err := writeGridConfig(sub, cfg.ScenarioConfig(i)); err != nil { // as if it ran with it
			t.Fatal(err)
		}
	}
	in := 999.0
	cfg.Scenarios[0].InputTokens = &workload.Dist{Mean: in} // then changed in the grid's config.yaml
	if err := writeGridConfig(dir, cfg); err != nil {
		t.Fatal(err)
	}
	if err := writeGridDoc(dir, cfg, nil); err != nil {
		t.Fatal(err)
	}

	r := runCmd(nil, "analyze", dir, "--bootstrap", "0") // its flags reach every scenario
	if r.err != nil || !strings.Contains(r.stdout, "kneecap scenario grid g:") {
		t.Fatalf("analyze grid: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	doc := readGrid(t, dir)
	for _, sc := range doc.Scenarios {
		if sc.Status != gridFinished || sc.Knee == nil || !sc.Knee.Concurrency.OK() || sc.Knee.Interval[0].OK() {
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
	var cmp gridComparison
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
}

// copyGrid copies the grid in dir to to without scenario skip: its scenarios.json (the shape
// of the first kept scenario changed) and each kept scenario's analysis.json.
func copyGrid(t *testing.T, dir, to, skip string) string {
	t.Helper()
	doc := readGrid(t, dir)
	var kept []gridEntry
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
	if err := os.WriteFile(filepath.Join(to, scenariosFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestGridOutcomes: what a scenario's sweep returned decides whether the grid carries on (a
// failure of its own, recorded with why), or stops (an interrupt, an unreachable server); the
// --resume hint only while a scenario is left; a flag every scenario overrides is warned about.
func TestGridOutcomes(t *testing.T) {
	e, _, stderr := testEnv()
	faults := map[string]scenarioFault{}
	if err := scenarioOutcome(e, nil, false, "ok", faults); err != nil || len(faults) != 0 {
		t.Errorf("a finished scenario: %v, %v", err, faults)
	}
	if err := scenarioOutcome(e, usageError("sweep: preflight: model x not found"), false, "bad", faults); err != nil ||
		faults["bad"] != (scenarioFault{gridFailed, "sweep: preflight: model x not found"}) || !strings.Contains(stderr.String(), "scenario bad failed") {
		t.Errorf("a failing scenario: %v, %+v, %q; want it recorded and the grid carried on", err, faults, stderr.String())
	}
	down := scenarioOutcome(e, withCode(exitUnreachable, errors.New("sweep: server unreachable: at N=4")), false, "down", faults)
	if exitCode(down) != exitUnreachable || faults["down"].status != gridUnreachable {
		t.Errorf("an unreachable server: %v (exit %d), %+v; want exit 3, unreachable", down, exitCode(down), faults["down"])
	}
	stop := scenarioOutcome(e, nil, true, "last", faults)
	if exitCode(stop) != exitInterrupted {
		t.Errorf("an interrupt after a scenario: %v, want exit 130", stop)
	}
	cfg := config.Default()
	cfg.Scenarios = []config.Scenario{{Name: "only"}}
	dir := t.TempDir()
	writeGroundTruthRun(t, filepath.Join(dir, "only"), 4, []int{1, 2})
	if msg := errString(gridStopped(stop, dir, cfg)); strings.Contains(msg, "--resume") || !strings.Contains(msg, "interrupted after scenario last") {
		t.Errorf("interrupted with nothing left to run: %q, want no --resume hint", msg)
	}
	cfg.Scenarios = append(cfg.Scenarios, config.Scenario{Name: "next"})
	if msg := errString(gridStopped(down, dir, cfg)); !strings.Contains(msg, "continue the grid with --resume "+dir) || !strings.Contains(msg, "scenario down: sweep: server unreachable") {
		t.Errorf("unreachable with a scenario left: %q, want the --resume hint", msg)
	}

	in := 512
	cfg.Scenarios = []config.Scenario{{Name: "a", InputTokens: &workload.Dist{Mean: float64(in)}}, {Name: "b", InputTokens: &workload.Dist{Mean: 64}}}
	stderr.Reset()
	warnOverridden(e, &sweepFlags{set: map[string]bool{"input-tokens": true, "output-tokens": true}}, cfg)
	if w := stderr.String(); !strings.Contains(w, "--input-tokens applies to no scenario: every scenario sets its own input_tokens (a, b)") || strings.Contains(w, "output-tokens") {
		t.Errorf("warnings %q", w)
	}
}
