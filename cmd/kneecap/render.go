package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
)

// writeReports renders the charts of res into outDir (every chart as PNG and SVG), writes
// report.md and the self-contained report.html there (each atomically: temporary file, then
// rename), and prints the console summary to e.stdout.
func writeReports(e *env, res *analysis.Result, outDir string) error {
	paths, err := plots.WriteAll(res, outDir)
	if err != nil {
		return fmt.Errorf("render: charts: %w", err)
	}
	var pngs []string
	svgs := map[string][]byte{}
	for _, p := range paths {
		base := filepath.Base(p)
		name := strings.TrimSuffix(base, filepath.Ext(base))
		switch filepath.Ext(base) {
		case ".png":
			if name != "dashboard" {
				pngs = append(pngs, base)
			}
		case ".svg":
			b, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("render: %w", err)
			}
			svgs[name] = b
		}
	}
	// The dashboard leads the Markdown report: one image that answers at a glance.
	if _, ok := svgs["dashboard"]; ok {
		pngs = append([]string{"dashboard.png"}, pngs...)
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, res, pngs); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(outDir, "report.md"), md.Bytes()); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var html bytes.Buffer
	if err := report.HTML(&html, res, svgs); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(outDir, "report.html"), html.Bytes()); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := report.Console(e.stdout, res); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	fmt.Fprintf(e.stdout, "\nreport: %s\n", filepath.Join(outDir, "report.html"))
	return nil
}
