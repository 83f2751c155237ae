package report_test

// Energy per output token side by side: kneecap compare of runs with GPU telemetry.

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// energyRuns are two runs of the energy fixture as on two GPU types: h100 as the fixture, b200
// drawing less (0.15 J/token at its lowest at concurrency 16, 0.2 at the SLO point).
func energyRuns() []*analysis.Result {
	a, b := analysistest.WithEnergy(), analysistest.WithEnergy()
	b.Meta.Name = "b200"
	e := b.Energy
	e.Optimal.X, e.Optimal.JPerOutputToken, e.Optimal.Interval = 16, 0.15, &[2]analysis.Float{12, 20}
	e.AtSLOPoint.JPerOutputToken, e.AtKnee.JPerOutputToken, e.IdleW = 0.2, 0.21, 90
	return []*analysis.Result{a, b}
}

// TestCompareEnergy: compare.md and the --wide console give each run's J/token at the optimum
// and at the SLO point; the default console gives them in a table of their own within 80
// columns; a run without telemetry reads "—"; runs without any have none of it.
func TestCompareEnergy(t *testing.T) {
	runs, labels := energyRuns(), []string{"h100", "b200"}
	var md, con, wide bytes.Buffer
	if err := report.Compare(&md, runs, labels, nil, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "compare.md", md.String(), "J/token at the energy optimum (@ N, 95% interval) | J/token at the SLO point | warnings |",
		"| 0.196 @ 10.3 (8.90–12.1) | 0.263 | 2 |", "| 0.15 @ 16 (12–20) | 0.2 | 2 |")
	if err := report.CompareConsole(&con, runs, labels, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "compare console", con.String(), "run   J/tok min  at N  J/tok SLO  J/tok knee  idle W",
		"h100  0.196      10.3  0.263      0.263       120", "b200  0.15       16    0.2        0.21        90.0")
	for _, line := range strings.Split(con.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > report.ConsoleWidth {
			t.Errorf("compare console line of %d characters: %s", n, line)
		}
	}
	if err := report.CompareConsoleWith(&wide, runs, labels, nil, report.CompareConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "compare --wide", wide.String(), "J/token at the SLO point", "0.15 @ 16 (12–20)")
	runs[1].Energy = nil
	md.Reset()
	if err := report.Compare(&md, runs, labels, nil, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "compare.md, one run without telemetry", md.String(), "| — | — | 2 |")
	con.Reset()
	if err := report.CompareConsole(&con, []*analysis.Result{analysistest.Saturating(), analysistest.Saturating()}, labels, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(con.String(), "J/tok") {
		t.Error("runs without GPU telemetry have an energy table")
	}
}
