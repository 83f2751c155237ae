package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/summary"
)

// writeAnalysis writes dir/analysis.json (indented) and dir/summary.csv, each atomically.
func writeAnalysis(dir string, res *analysis.Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("analyze: encode analysis.json: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.AnalysisFile), append(b, '\n')); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	var csv bytes.Buffer
	if err := summary.WriteCSV(&csv, res.Levels); err != nil {
		return fmt.Errorf("analyze: summary.csv: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, summary.CSVFile), csv.Bytes()); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// writeResults renders the charts and reports of res (renderReports), then writes into outDir
// (created if need be) analysis.json, summary.csv, every chart as PNG and SVG, report.md and the
// self-contained report.html (each file atomically: temporary file, then rename), and prints
// the console summary to e.stdout. Everything is rendered before the first file is written: an
// interrupt (ctx, interruptError) while rendering ends command cmd with exit 130, saying what
// it left (left), and outDir as it was.
func writeResults(ctx context.Context, e *env, outDir string, res *analysis.Result, cmd, left string) error {
	rep, err := renderReports(ctx, res)
	if err := interruptError(ctx, cmd, left); err != nil {
		return err
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, rundir.DirPerm); err != nil {
		return usageError("%s: -o: %w", cmd, err)
	}
	if err := writeAnalysis(outDir, res); err != nil {
		return err
	}
	return rep.write(e, outDir)
}

// reports are the charts and reports of a run rendered in memory (renderReports), written
// together by write.
type reports struct {
	res      *analysis.Result
	charts   []plots.File
	md, html []byte
}

// renderReports renders the charts of res (every chart as PNG and SVG), report.md and the
// self-contained report.html, with the SVGs and their narrow renderings inlined, in memory.
// Once ctx is done (an interrupt) it stops between charts and returns ctx's error.
func renderReports(ctx context.Context, res *analysis.Result) (*reports, error) {
	charts, err := plots.RenderAllContext(ctx, res)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("render: charts: %w", err)
	}
	var pngs []string
	for _, c := range charts {
		if c.Format == "png" && c.Name != "dashboard" {
			pngs = append(pngs, c.FileName())
		}
	}
	svgs := plots.SVGs(charts, report.NarrowSuffix)
	// The dashboard leads the Markdown report: one image that answers at a glance.
	if _, ok := svgs["dashboard"]; ok {
		pngs = append([]string{"dashboard.png"}, pngs...)
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, res, pngs); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	var html bytes.Buffer
	if err := report.HTML(&html, res, svgs); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return &reports{res: res, charts: charts, md: md.Bytes(), html: html.Bytes()}, nil
}

// write saves the charts, report.md and report.html into outDir, each atomically, and prints
// the console summary to e.stdout.
func (r *reports) write(e *env, outDir string) error {
	if err := saveCharts(outDir, r.charts); err != nil {
		return fmt.Errorf("render: charts: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(outDir, rundir.ReportFile), r.md); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(outDir, rundir.ReportHTMLFile), r.html); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	opts := report.ConsoleOptions{Wide: e.wide}
	if e.stdoutTTY {
		opts.Width = e.columns() // prose wrapped to the terminal; files and pipes get one line a sentence
	}
	if err := report.ConsoleWith(e.stdout, r.res, opts); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	fmt.Fprintf(e.stdout, "\nreport: %s\n", filepath.Join(outDir, rundir.ReportHTMLFile))
	return nil
}

// saveCharts writes every rendered chart into dir as its FileName, each atomically.
func saveCharts(dir string, charts []plots.File) error {
	for _, c := range charts {
		if c.Narrow {
			continue // inlined in report.html only
		}
		if err := rundir.WriteFileAtomic(filepath.Join(dir, c.FileName()), c.Data); err != nil {
			return err
		}
	}
	return nil
}
