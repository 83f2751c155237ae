package report_test

// Energy per output token in the reports: present with GPU telemetry (the fixtures of
// analysistest.WithEnergy and RateWithEnergy, the simulator's power model), absent without.

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// TestGoldenEnergy pins the console summary (default and --wide), report.md and report.html of
// the energy fixture byte for byte (regenerate with `go test ./report -run Golden -update`).
func TestGoldenEnergy(t *testing.T) {
	res := analysistest.WithEnergy()
	var c, w, m, h bytes.Buffer
	if err := report.Console(&c, res); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("energy", "console.txt"), c.Bytes())
	if err := report.ConsoleWith(&w, res, report.ConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("energy", "console_wide.txt"), w.Bytes())
	if err := report.Markdown(&m, res, append(reportCharts, "efficiency.png")); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("energy", "report.md"), m.Bytes())
	if err := report.HTML(&h, res, nil); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("energy", "report.html"), h.Bytes())
}

// energyTexts are what every report of the energy fixture states (analysistest.WithEnergy:
// 0.196 J/token at its lowest at concurrency 10.3, 0.2625 from the knee on, idle 120 W, 700 W
// a replica, 16.1 kW, 0.0729 kWh and $0.00875 per 1M output tokens).
var energyTexts = []string{
	"Energy per output token, over 1 GPU (dcgm): lowest 0.196 J at concurrency 10.3 (95% interval 8.90–12.1); 0.263 J at the knee, 0.263 J at the SLO point and 0.263 J at max TPS; idle power 120 W.",
	"At the SLO point the plan's GPUs draw 700 W a replica, 16.1 kW for the fleet, 0.0729 kWh per 1M output tokens and $0.00875 of electricity per 1M output tokens.",
}

// TestEnergyReports: the answer of every format states the energy figures; report.md and
// report.html have the Energy section and the level table's columns, report.html the Energy
// and Fleet power cards and the efficiency chart in the chart grid.
func TestEnergyReports(t *testing.T) {
	res := analysistest.WithEnergy()
	var con, md, h bytes.Buffer
	if err := report.Console(&con, res); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&md, res, []string{"efficiency.png"}); err != nil {
		t.Fatal(err)
	}
	svg := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>efficiency</text></svg>`)
	if err := report.HTML(&h, res, map[string][]byte{"throughput": svg, "efficiency": svg}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "console", con.String(), energyTexts...)
	mustContain(t, "report.md", md.String(), "## Energy", "| energy optimum (lowest) | 0.196 J/token at concurrency 10.3 (95% interval 8.90–12.1), 307 W |",
		"| plan: fleet power | 16.1 kW |", "J per output token | GPU power (W) | valid |", "| 0.199 | 265 |", "![efficiency](efficiency.png)")
	doc := h.String()
	mustContain(t, "report.html", doc, `<div class="label">Energy</div><div class="value">0.196 <span class="unit">J/token</span>`,
		"lowest, at concurrency 10.3 (95% interval 8.90–12.1) · 0.263 J at the knee · 0.263 J at the SLO point · 0.263 J at max TPS · idle 120 W",
		`<div class="label">Fleet power</div><div class="value">16.1 <span class="unit">kW</span>`, `<section id="energy">`, `<a href="#energy">Energy</a>`,
		"<th>J per output token</th><th>GPU power (W)</th><th>valid</th>")
	if i, j := strings.Index(doc, `id="chart-throughput"`), strings.Index(doc, `id="chart-efficiency"`); i < 0 || j < i {
		t.Errorf("the efficiency chart is not in the chart grid after the throughput chart (at %d, %d)", j, i)
	}
}

// TestEnergyAbsentWithoutTelemetry: a run without GPU telemetry has no energy text, card,
// section or column in any format (its goldens hold the rest).
func TestEnergyAbsentWithoutTelemetry(t *testing.T) {
	for _, res := range []*analysis.Result{analysistest.Saturating(), analysistest.Rate()} {
		var con, wide, md, h bytes.Buffer
		for _, err := range []error{report.Console(&con, res), report.ConsoleWith(&wide, res, report.ConsoleOptions{Wide: true}),
			report.Markdown(&md, res, nil), report.HTML(&h, res, nil)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		for what, doc := range map[string]string{"console": con.String(), "wide": wide.String(), "report.md": md.String(), "report.html": h.String()} {
			for _, s := range []string{"J/tok", "GPU W", "Energy", "J per output token", "Fleet power"} {
				if strings.Contains(doc, s) {
					t.Errorf("%s %s without GPU telemetry contains %q", res.Meta.Name, what, s)
				}
			}
		}
	}
}

// TestConsoleEnergyColumns: --wide adds J/tok and GPU W before valid, each level's figures
// from the power model (level 8: 265 W ÷ 1333 tok/s = 0.199 J/token); the default table
// leaves them out and stays within 80 columns.
func TestConsoleEnergyColumns(t *testing.T) {
	for _, res := range []*analysis.Result{analysistest.WithEnergy(), analysistest.RateWithEnergy()} {
		var narrow, wide bytes.Buffer
		if err := report.ConsoleWith(&narrow, res, report.ConsoleOptions{Width: report.ConsoleWidth}); err != nil {
			t.Fatal(err)
		}
		if err := report.ConsoleWith(&wide, res, report.ConsoleOptions{Wide: true}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(narrow.String(), "J/tok") {
			t.Errorf("%s: the default table shows J/tok", res.Meta.Name)
		}
		for _, line := range strings.Split(narrow.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > report.ConsoleWidth {
				t.Errorf("%s: a default line of %d characters: %s", res.Meta.Name, n, line)
			}
		}
		mustContain(t, res.Meta.Name+" --wide", wide.String(), "J/tok  GPU W  valid", "J/tok = the GPUs' energy per output token")
	}
	var wide bytes.Buffer
	if err := report.ConsoleWith(&wide, analysistest.WithEnergy(), report.ConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(wide.String(), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == "8" && (f[len(f)-3] != "0.199" || f[len(f)-2] != "265") {
			t.Errorf("level 8 reads J/tok %s, GPU W %s; want 0.199 and 265: %s", f[len(f)-3], f[len(f)-2], line)
		}
	}
}

// TestEnergyRateReport: an arrival-rate run places the energy answers on the rate axis and
// calls the knee the capacity.
func TestEnergyRateReport(t *testing.T) {
	answer := strings.Join(report.Answer(analysistest.RateWithEnergy()), " ")
	mustContain(t, "rate answer", answer, "lowest 0.205 J at 12.0 requests/s (95% interval 10.0–14.0); 0.249 J at the capacity, 0.249 J at the SLO point and 0.263 J at max TPS; idle power 120 W.")
}

// TestEnergyEscaped: the telemetry's source name, text from analysis.json, is escaped in
// report.html and report.md.
func TestEnergyEscaped(t *testing.T) {
	res := analysistest.WithEnergy()
	res.Energy.Source = "<script>alert(1)</script>"
	var md, h bytes.Buffer
	if err := report.Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	if err := report.HTML(&h, res, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.String(), "<script>alert") || strings.Contains(md.String(), "<script>alert") {
		t.Error("the source name is not escaped")
	}
}
