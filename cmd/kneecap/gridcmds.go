package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/grid"
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
	if err := grid.CheckNames(dir, cfg); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	var done []string // the scenarios re-analyzed, for an interrupt's message
	for _, sc := range cfg.Scenarios {
		if err := interruptError(ctx, "analyze", gridLeft(done)); err != nil {
			return err
		}
		sub := filepath.Join(dir, sc.Name)
		if st, _ := grid.Status(sub); st == grid.NotRun {
			fmt.Fprintf(e.stderr, "kneecap: analyze: scenario %s has not run: left out\n", sc.Name)
			continue
		}
		in, err := summary.LoadContext(ctx, sub, true)
		if err := interruptError(ctx, "analyze", gridLeft(done)); err != nil {
			return err
		}
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("analyze: scenario %s: %w", sc.Name, err))
		}
		res := in.Analyze(af.apply(in.Options, ctx.Done()))
		if err := writeResults(ctx, e.quiet(), sub, res, "analyze", gridLeft(done)); err != nil {
			return err
		}
		done = append(done, sc.Name)
		fmt.Fprintf(e.stderr, "kneecap: analyze: scenario %s: %s\n", sc.Name, filepath.Join(sub, rundir.ReportHTMLFile))
	}
	return writeGrid(e, dir, cfg, grid.PriorReasons(dir))
}

// gridLeft says what an interrupted re-analysis of a grid left: the scenarios it rewrote
// (whole, each file atomically) and the grid's files untouched.
func gridLeft(done []string) string {
	if len(done) == 0 {
		return nothingWritten
	}
	return fmt.Sprintf("scenarios %s re-analyzed, the others and the grid's combined files as they were", strings.Join(done, ", "))
}

// compareGrids compares two scenario grids scenario by scenario (DESIGN §5.8): each scenario
// present in both, matched by name, gets the ordinary comparison of its two runs in
// out/NAME/ (with the regression gate when maxDrop ≥ 0: a run's figures against the first
// grid's); out/ gets the combined comparison of every such pair, labelled NAME/GRID, and its
// table on stdout. The scenarios only one grid has (or has not analyzed) are named on stderr
// and in compare.md; with the gate, a baseline scenario the second grid lacks or has not
// analyzed fails it, and out/compare.json lists every scenario's verdict. A regression in any
// pair, or such a missing scenario, is exit 4, after everything is written. Scenarios of
// different shapes in the two grids are warned about.
func compareGrids(ctx context.Context, e *env, out string, dirs []string, maxDrop float64, maxReg string) error {
	docs := make([]grid.Doc, 2)
	for i, d := range dirs {
		var err error
		if docs[i], err = grid.ReadDoc(d); err != nil {
			return err
		}
	}
	ls := rundir.UniqueLabels([]string{rundir.BaseName(dirs[0]), rundir.BaseName(dirs[1])}, dirs)
	la, lb := ls[0], ls[1]
	gate := maxDrop >= 0
	inB := map[string]grid.Entry{}
	for _, s := range docs[1].Scenarios {
		inB[s.Name] = s
	}
	cmp := grid.NewComparison(la, lb, maxDrop)
	var all []*analysis.Result
	var allLabels []string
	var regressed []error
	inA := map[string]bool{}
	for _, s := range docs[0].Scenarios {
		inA[s.Name] = true
		b, ok := inB[s.Name]
		if !ok {
			cmp.Miss(fmt.Sprintf("scenario %s is only in %s", s.Name, la), gate)
			continue
		}
		if s.Shape != b.Shape {
			fmt.Fprintf(e.stderr, "kneecap compare: warning: scenario %s has shape %s in %s but %s in %s: not the same workload\n", s.Name, s.Shape, la, b.Shape, lb)
			cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("scenario %s: shape %s in %s, %s in %s", s.Name, s.Shape, la, b.Shape, lb))
		}
		runs, why, side := gridPair(dirs, s.Name)
		if why != "" {
			cmp.Miss(why, gate && side == 1)
			continue
		}
		n, err := comparePair(ctx, e, filepath.Join(out, s.Name), runs, []string{la, lb}, maxDrop, maxReg)
		if exitCode(err) == exitInterrupted {
			return err
		}
		if err != nil && exitCode(err) != exitRegressed {
			return fmt.Errorf("compare: scenario %s: %w", s.Name, err)
		}
		if err != nil {
			regressed = append(regressed, fmt.Errorf("scenario %s: %w", s.Name, err))
		}
		cmp.Add(s.Name, n)
		all = append(all, runs...)
		allLabels = append(allLabels, s.Name+"/"+la, s.Name+"/"+lb)
	}
	for _, s := range docs[1].Scenarios {
		if !inA[s.Name] {
			cmp.Miss(fmt.Sprintf("scenario %s is only in %s", s.Name, lb), false)
		}
	}
	for _, m := range cmp.Missing {
		fmt.Fprintf(e.stderr, "kneecap compare: %s\n", m.NotCompared())
	}
	if len(all) == 0 {
		return usageError("compare: %s and %s have no analyzed scenario in common", dirs[0], dirs[1])
	}
	if err := writeComparison(ctx, e, out, all, allLabels, nil); err != nil {
		if exitCode(err) == exitInterrupted {
			return err
		}
		return fmt.Errorf("compare: %w", err)
	}
	if err := cmp.Write(out, gate); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	for _, m := range cmp.Missing {
		if m.FailsGate {
			regressed = append(regressed, fmt.Errorf("%s: the gate fails (baseline %s)", m.What, la))
		}
	}
	if len(regressed) > 0 {
		return withCode(exitRegressed, errors.Join(regressed...))
	}
	return nil
}

// comparePair writes the comparison of one scenario's two runs into sub (with the gate when
// maxDrop ≥ 0) and returns its number of regressions and gateVerdict's error; an interrupt
// (ctx) ends it before anything is written, with exit 130.
func comparePair(ctx context.Context, e *env, sub string, runs []*analysis.Result, labels []string, maxDrop float64, maxReg string) (int, error) {
	var gate *analysis.GateReport
	if maxDrop >= 0 {
		g := analysis.CompareGate(runs, labels, maxDrop)
		gate = &g
	}
	if err := writeComparison(ctx, e.quiet(), sub, runs, labels, gate); err != nil {
		return 0, err
	}
	if gate == nil {
		return 0, nil
	}
	return gate.Regressions(), gateVerdict(gate, labels, maxReg)
}

// gridPair reads scenario name's analysis in both grids; why says what is missing instead,
// side which grid lacks it (0 or 1; 1 too for runs of different modes or yardsticks,
// analysis.Comparable).
func gridPair(dirs []string, name string) (runs []*analysis.Result, why string, side int) {
	for i, d := range dirs {
		sub := filepath.Join(d, name)
		if _, err := os.Stat(filepath.Join(sub, rundir.AnalysisFile)); err != nil {
			return nil, fmt.Sprintf("scenario %s has no analysis in %s", name, d), i
		}
		res, _, err := readRun(sub)
		if err != nil {
			return nil, fmt.Sprintf("scenario %s in %s: %v", name, d, err), i
		}
		runs = append(runs, res)
	}
	if err := analysis.Comparable(runs, []string{dirs[0], dirs[1]}); err != nil {
		return nil, fmt.Sprintf("scenario %s: %v", name, err), 1
	}
	return runs, "", 0
}
