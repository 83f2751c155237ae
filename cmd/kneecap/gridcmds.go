package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/summary"
)

// analyzeGrid re-analyzes every scenario of the grid in dir that has levels, in place, as
// `kneecap analyze DIR/NAME` would (af's flags apply to each), then rewrites the grid's
// combined files and prints its table of knees.
func analyzeGrid(ctx context.Context, e *env, dir string, af *analyzeFlags) error {
	cfg, err := config.Read(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("analyze: %s: %w", dir, err))
	}
	if !cfg.Grid() {
		return usageError("analyze: %s: its config.yaml has no scenarios", dir)
	}
	for _, sc := range cfg.Scenarios {
		if err := ctx.Err(); err != nil {
			return err
		}
		sub := filepath.Join(dir, sc.Name)
		if st, _ := scenarioStatus(sub); st == gridNotRun {
			fmt.Fprintf(e.stderr, "kneecap: analyze: scenario %s has not run: left out\n", sc.Name)
			continue
		}
		in, err := summary.Load(sub, true)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("analyze: scenario %s: %w", sc.Name, err))
		}
		res := in.Analyze(af.apply(in.Options))
		if err := writeAnalysis(sub, res); err != nil {
			return err
		}
		if err := writeReports(e.quiet(), res, sub); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "kneecap: analyze: scenario %s: %s\n", sc.Name, filepath.Join(sub, "report.html"))
	}
	return writeGrid(e, dir, cfg, priorReasons(dir))
}

// readGridDoc reads a grid directory's scenarios.json.
func readGridDoc(dir string) (gridDoc, error) {
	var doc gridDoc
	b, err := os.ReadFile(filepath.Join(dir, scenariosFile))
	if err != nil {
		return doc, usageError("compare: %w", err)
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Schema != gridSchema {
		return doc, usageError("compare: %s: not a scenarios.json of kneecap (schema %q, want %q)", filepath.Join(dir, scenariosFile), doc.Schema, gridSchema)
	}
	return doc, nil
}

// gridLabel labels a grid by its directory's name.
func gridLabel(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return filepath.Base(abs)
}

// compareGrids compares two scenario grids scenario by scenario (DESIGN §5.8): each scenario
// present in both, matched by name, gets the ordinary comparison of its two runs in
// out/NAME/ (with the regression gate when maxDrop ≥ 0: a run's figures against the first
// grid's); out/ gets the combined comparison of every such pair, labelled NAME/GRID, and its
// table on stdout. The scenarios only one grid has (or has not analyzed) are named on stderr
// and in compare.md. A regression in any pair is exit 4, after everything is written.
func compareGrids(ctx context.Context, e *env, out string, dirs []string, maxDrop float64, maxReg string) error {
	docs := make([]gridDoc, 2)
	for i, d := range dirs {
		var err error
		if docs[i], err = readGridDoc(d); err != nil {
			return err
		}
	}
	la, lb := gridLabel(dirs[0]), gridLabel(dirs[1])
	if la == lb {
		lb += "#2"
	}
	inB := map[string]bool{}
	for _, s := range docs[1].Scenarios {
		inB[s.Name] = true
	}
	var missing []string
	var all []*analysis.Result
	var allLabels []string
	var regressed []error
	inA := map[string]bool{}
	for _, s := range docs[0].Scenarios {
		inA[s.Name] = true
		if !inB[s.Name] {
			missing = append(missing, fmt.Sprintf("scenario %s is only in %s", s.Name, la))
			continue
		}
		runs, why := gridPair(dirs, s.Name)
		if why != "" {
			missing = append(missing, why)
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		labels := []string{la, lb}
		var gate *analysis.GateReport
		if maxDrop >= 0 {
			g := analysis.CompareGate(runs, labels, maxDrop)
			gate = &g
		}
		sub := filepath.Join(out, s.Name)
		if err := os.MkdirAll(sub, rundir.DirPerm); err != nil {
			return usageError("compare: -o: %w", err)
		}
		if err := writeComparison(e.quiet(), sub, runs, labels, gate); err != nil {
			return fmt.Errorf("compare: scenario %s: %w", s.Name, err)
		}
		if err := gateVerdict(gate, labels, maxReg); err != nil {
			regressed = append(regressed, fmt.Errorf("scenario %s: %w", s.Name, err))
		}
		all = append(all, runs...)
		allLabels = append(allLabels, s.Name+"/"+la, s.Name+"/"+lb)
	}
	for _, s := range docs[1].Scenarios {
		if !inA[s.Name] {
			missing = append(missing, fmt.Sprintf("scenario %s is only in %s", s.Name, lb))
		}
	}
	for _, m := range missing {
		fmt.Fprintf(e.stderr, "kneecap compare: %s: not compared\n", m)
	}
	if len(all) == 0 {
		return usageError("compare: %s and %s have no analyzed scenario in common", dirs[0], dirs[1])
	}
	if err := writeComparison(e, out, all, allLabels, nil); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if err := appendMissing(filepath.Join(out, rundir.CompareOutput), missing); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if len(regressed) > 0 {
		return withCode(exitRegressed, errors.Join(regressed...))
	}
	return nil
}

// gridPair reads scenario name's analysis in both grids; why says what is missing instead.
func gridPair(dirs []string, name string) ([]*analysis.Result, string) {
	var runs []*analysis.Result
	for _, d := range dirs {
		sub := filepath.Join(d, name)
		if _, err := os.Stat(filepath.Join(sub, rundir.AnalysisFile)); err != nil {
			return nil, fmt.Sprintf("scenario %s has no analysis in %s", name, d)
		}
		res, _, err := readRun(sub)
		if err != nil {
			return nil, fmt.Sprintf("scenario %s in %s: %v", name, d, err)
		}
		runs = append(runs, res)
	}
	if err := analysis.SameMode(runs, []string{dirs[0], dirs[1]}); err != nil {
		return nil, fmt.Sprintf("scenario %s: %v", name, err)
	}
	return runs, ""
}

// appendMissing adds a section naming the scenarios not compared to compare.md.
func appendMissing(path string, missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sb strings.Builder
	sb.Write(b)
	sb.WriteString("## Scenarios not compared\n\n")
	for _, m := range missing {
		sb.WriteString("- " + m + "\n")
	}
	return rundir.WriteFileAtomic(path, []byte(sb.String()))
}
