package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis/analysistest"
)

// The files of an analyzed run (charts, report.md, report.html) and the console summary,
// rendered from a hand-made result.

// TestWriteReports renders a full results directory from a hand-made result: every chart as
// PNG and SVG, report.md, report.html, and the console summary.
func TestWriteReports(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("renders full-size charts")
	}
	dir := t.TempDir()
	e, stdout, _ := compareEnv()
	res := compareRun("r", 32, 3000, 22)
	if err := writeResults(context.Background(), e, dir, res, "analyze", nothingWritten); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"throughput", "ttft", "tpot", "latency_vs_throughput", "qps", "dashboard"} {
		for _, ext := range []string{".png", ".svg"} {
			b, err := os.ReadFile(filepath.Join(dir, n+ext))
			if err != nil {
				t.Error(err)
			}
			if bytes.Contains(b, []byte(`width="288pt"`)) {
				t.Errorf("%s%s is the narrow rendering, not the 7 in chart", n, ext)
			}
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "![dashboard](dashboard.png)") || !strings.Contains(string(md), "![qps](qps.png)") {
		t.Error("report.md does not embed the charts")
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n, narrow := strings.Count(string(html), "<svg"), strings.Count(string(html), `<div class="narrow"><svg`); n != 10 || narrow != 5 {
		t.Errorf("report.html inlines %d svgs, %d of them narrow; want 5 charts and their narrow renderings", n, narrow)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*narrow*")); len(files) > 0 {
		t.Errorf("narrow renderings written as files: %v", files)
	}
	if !strings.Contains(stdout.String(), "Maximum output throughput is 3000 tokens/s at concurrency 32") {
		t.Errorf("console summary lacks the answer:\n%s", stdout)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriteReportsEnergy: a run with energy answers gets efficiency.png and .svg, embedded in
// report.md and inlined in report.html; one without (TestWriteReports' run) gets neither.
func TestWriteReportsEnergy(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("renders full-size charts")
	}
	for _, energy := range []bool{true, false} {
		dir := t.TempDir()
		e, _, _ := compareEnv()
		res := analysistest.WithEnergy()
		if !energy {
			res = analysistest.Saturating()
		}
		if err := writeResults(context.Background(), e, dir, res, "analyze", nothingWritten); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".png", ".svg"} {
			if _, err := os.Stat(filepath.Join(dir, "efficiency"+ext)); (err == nil) != energy {
				t.Errorf("energy %v: efficiency%s: %v", energy, ext, err)
			}
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		html, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(md), "![efficiency](efficiency.png)") != energy || strings.Contains(string(html), `id="chart-efficiency"`) != energy {
			t.Errorf("energy %v: report.md or report.html embeds the efficiency chart: %v", energy, !energy)
		}
	}
}
