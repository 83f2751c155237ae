package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/internal/grid"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
)

const compareUsage = "RUN... -o DIR [--max-regression PCT]\n\n" +
	"Compares two or more analyzed runs (one per GPU type, or before and after a change). Each\n" +
	"RUN is a results directory, a directory holding analysis.json, or an analysis.json file\n" +
	"(run kneecap analyze first). Writes DIR/compare.md (a side-by-side table of knee, max TPS,\n" +
	"SLO point and TTFT blow-up, then each run's answer and warnings), the same as one page,\n" +
	"DIR/compare.html (the charts inlined, no script), and the overlay charts\n" +
	"DIR/compare_throughput (TPS vs concurrency, each knee marked) and DIR/compare_latency\n" +
	"(E2E and TTFT p95 vs TPS, points labelled N=concurrency) as PNG and SVG; prints the table\n" +
	"in the columns that fit 80 (--wide: every column of compare.md's). Two scenario grids are\n" +
	"compared scenario by scenario (DIR/NAME/), and all their pairs together in DIR.\n\n" +
	"--max-regression PCT (such as 10%) makes compare a regression gate for continuous\n" +
	"benchmarking: the first RUN is the baseline, and compare exits 4 when a later run's max TPS,\n" +
	"knee (N or TPS), SLO point (N, TPS or goodput) or TTFT blow-up falls more than PCT below\n" +
	"the baseline's (a run with no valid level fails every figure). Everything is written\n" +
	"first, the verdicts also as DIR/compare.json."

// cmdCompare overlays several analyzed runs: `kneecap compare RUN... -o DIR`. Each RUN is a
// results directory (or any directory holding analysis.json, or the analysis.json file
// itself). It writes compare_throughput and compare_latency as PNG and SVG, and compare.md
// and compare.html with a side-by-side table, into DIR, and prints the table to stdout.
// Fewer than two runs, a run without a readable analysis.json, or runs of both modes
// (closed loop and arrival rate) is a usage error (exit 2) naming them.
func cmdCompare(ctx context.Context, e *env, args []string) error {
	ctx, release := untilInterrupt(ctx, e)
	defer release()
	fset := newFlagSet(e, "compare", compareUsage)
	out := fset.String("o", "", "output `DIR` for compare.md, compare.html and the overlay charts (required)")
	maxReg := fset.String("max-regression", "", "exit 4 when a headline figure falls more than `PCT` (10% or 0.1) below the first run's")
	fset.BoolVar(&e.wide, "wide", false, "show every column of the compare tables (the default columns fit 80)")
	pos, err := parseArgs(fset, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return cmdUsageError("compare", "compare: need at least 2 runs, got %d", len(pos))
	}
	if *out == "" {
		return cmdUsageError("compare", "compare: -o DIR is required")
	}
	if err := rundir.CheckOutput(*out, rundir.CompareOutput); err != nil {
		return usageError("compare: -o: %w", err)
	}
	maxDrop := -1.0
	gateSet := false
	fset.Visit(func(f *flag.Flag) { gateSet = gateSet || f.Name == "max-regression" })
	if gateSet {
		if maxDrop, err = parseFraction(*maxReg); err != nil {
			return cmdUsageError("compare", "compare: --max-regression: %v", err)
		}
	}
	if grids := countGrids(pos); grids > 0 {
		if grids != 2 || len(pos) != 2 {
			return usageError("compare: of %s, %d are scenario grids: compare two grids (kneecap compare GRID_A GRID_B -o DIR), or a scenario's directory GRID/NAME with other runs", strings.Join(pos, ", "), grids)
		}
		return compareGrids(ctx, e, *out, pos, maxDrop, *maxReg)
	}
	runs, labels, err := readRuns(ctx, pos)
	if err != nil {
		return err
	}
	if err := interruptError(ctx, "compare", nothingWritten); err != nil {
		return err
	}
	var gate *analysis.GateReport
	if maxDrop >= 0 {
		g := analysis.CompareGate(runs, labels, maxDrop)
		gate = &g
	}
	if err := writeComparison(ctx, e, *out, runs, labels, gate); err != nil {
		if exitCode(err) == exitInterrupted {
			return err
		}
		return fmt.Errorf("compare: %w", err)
	}
	return gateVerdict(gate, labels, *maxReg)
}

// countGrids counts the scenario grids among the arguments.
func countGrids(pos []string) int {
	n := 0
	for _, p := range pos {
		if grid.IsDir(p) {
			n++
		}
	}
	return n
}

// readRuns reads the runs named by pos (readRun), labels them uniquely (rundir.UniqueLabels) and
// refuses runs of both modes (a usage error naming them).
func readRuns(ctx context.Context, pos []string) ([]*analysis.Result, []string, error) {
	runs := make([]*analysis.Result, 0, len(pos))
	labels := make([]string, 0, len(pos))
	for _, p := range pos {
		if err := interruptError(ctx, "compare", nothingWritten); err != nil {
			return nil, nil, err
		}
		res, label, err := readRun(p)
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, res)
		labels = append(labels, label)
	}
	labels = rundir.UniqueLabels(labels, pos)
	if err := analysis.Comparable(runs, labels); err != nil {
		return nil, nil, usageError("compare: %v", err)
	}
	return runs, labels, nil
}

// writeComparison writes into out the overlay charts, compare.json (with a gate), compare.md
// and compare.html, prints the gate's warnings to stderr and the comparison tables to stdout.
// Everything is rendered in memory first: once ctx is done (an interrupt) it stops between
// charts and returns before writing any file, with exit 130.
func writeComparison(ctx context.Context, e *env, out string, runs []*analysis.Result, labels []string, gate *analysis.GateReport) error {
	overlays, err := plots.RenderCompareContext(ctx, runs, labels)
	if err := interruptError(ctx, "compare", nothingWritten+" in "+out); err != nil {
		return err
	}
	if err != nil {
		return err
	}
	var charts []string
	for _, c := range overlays {
		if c.Format == "png" {
			charts = append(charts, c.FileName())
		}
	}
	svgs := plots.SVGs(overlays, report.NarrowSuffix)
	var gateJSON []byte
	if gate != nil {
		b, err := json.MarshalIndent(gate.JSON(), "", "  ")
		if err != nil {
			return err
		}
		gateJSON = append(b, '\n')
	}
	var md bytes.Buffer
	if err := report.Compare(&md, runs, labels, charts, gate); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := report.CompareHTML(&page, runs, labels, svgs, gate); err != nil {
		return err
	}
	if err := interruptError(ctx, "compare", nothingWritten+" in "+out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, rundir.DirPerm); err != nil { // rendered: now the files
		return usageError("compare: -o: %w", err)
	}
	if err := saveCharts(out, overlays); err != nil {
		return err
	}
	if gate != nil {
		for _, w := range gate.Warnings {
			fmt.Fprintf(e.stderr, "kneecap compare: warning: %s\n", w)
		}
		if err := rundir.WriteFileAtomic(filepath.Join(out, rundir.CompareJSONFile), gateJSON); err != nil {
			return err
		}
	}
	if err := rundir.WriteFileAtomic(filepath.Join(out, rundir.CompareOutput), md.Bytes()); err != nil {
		return err
	}
	if err := rundir.WriteFileAtomic(filepath.Join(out, rundir.CompareHTMLFile), page.Bytes()); err != nil {
		return err
	}
	if err := report.CompareConsoleWith(e.stdout, runs, labels, gate, report.CompareConsoleOptions{Wide: e.wide}); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\ncomparison: %s\n", filepath.Join(out, rundir.CompareOutput))
	return nil
}

// gateVerdict returns the regression gate's exit-4 error naming every regressed figure, or nil
// (no gate, or nothing regressed).
func gateVerdict(gate *analysis.GateReport, labels []string, maxReg string) error {
	if gate == nil {
		return nil
	}
	n := gate.Regressions()
	if n == 0 {
		return nil
	}
	var what []string
	for i, cs := range gate.Checks {
		for _, c := range cs {
			if c.Verdict == analysis.GateRegressed {
				what = append(what, fmt.Sprintf("%s %s %s → %s (%+.1f%%)", labels[i+1], c.Metric,
					c.Base.Format(), c.Run.Format(), 100*float64(c.Change)))
			}
		}
	}
	noun := "regressions"
	if n == 1 {
		noun = "regression"
	}
	return withCode(exitRegressed, fmt.Errorf("compare: %d %s beyond %s against %s: %s", n, noun, maxReg, labels[0], strings.Join(what, "; ")))
}

// readRun reads RUN's analysis.json and labels the run (rundir.ReadAnalysis); what RUN is
// instead of a run is a usage error.
func readRun(p string) (*analysis.Result, string, error) {
	res, label, err := rundir.ReadAnalysis(p)
	if err != nil {
		return nil, "", usageError("compare: %w", err)
	}
	return res, label, nil
}

// parseFraction reads a fraction in [0, 1): "10%" or "0.1".
func parseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if rest, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(rest), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v/scale >= 0 && v/scale < 1) {
		return 0, fmt.Errorf("%q: want a fraction such as 10%% or 0.1, at least 0 and below 100%%", s)
	}
	return v / scale, nil
}
