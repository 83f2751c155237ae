package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/kneecap/kneecap/analysis"
)

// Energy per output token side by side (DESIGN §5.8): compare.md's and compare.html's table
// gains J/token at the energy optimum and at the SLO point when some run read GPU telemetry,
// and the compare console prints a table of each run's J/token under its own.

// anyEnergy reports whether some run has energy answers.
func anyEnergy(runs []*analysis.Result) bool {
	return slices.ContainsFunc(runs, func(r *analysis.Result) bool { return r.Energy != nil })
}

// runEnergy returns r's energy answers, all null when it has none.
func runEnergy(r *analysis.Result) analysis.Energy {
	if r.Energy != nil {
		return *r.Energy
	}
	n := analysis.NaN()
	none := analysis.EnergyPoint{X: n, JPerOutputToken: n, PowerW: n}
	return analysis.Energy{IdleW: n, Optimal: none, AtKnee: none, AtSLOPoint: none, AtMaxTPS: none}
}

// placeCell formats x on a run's load axis: a concurrency (fconc) or a rate (frate).
func placeCell(r *analysis.Result, x analysis.Float) string {
	if r.Mode.IsRate() {
		return frate(x)
	}
	return fconc(x)
}

// optimumCell is a run's energy optimum in the compare table: "0.196 @ 10.3 (8.90–12.1)".
func optimumCell(r *analysis.Result, p analysis.EnergyPoint) string {
	if !p.JPerOutputToken.OK() || !p.X.OK() {
		return dash
	}
	c := fjoule(p.JPerOutputToken) + " @ " + placeCell(r, p.X)
	if iv := p.Interval; iv != nil && iv[0].OK() && iv[1].OK() {
		c += fmt.Sprintf(" (%s–%s)", placeCell(r, iv[0]), placeCell(r, iv[1]))
	}
	return c
}

// withCompareEnergy inserts J per output token at the energy optimum and at the SLO point
// before the last column (warnings) of the compare table t of runs, when some run has energy
// answers; a run without reads "—".
func withCompareEnergy(t table, runs []*analysis.Result) table {
	if !anyEnergy(runs) || len(t.Header) == 0 || len(t.Rows) != len(runs) {
		return t
	}
	where := "@ N"
	if runs[0].Mode.IsRate() {
		where = "@ req/s"
	}
	at := len(t.Header) - 1
	t.Header = slices.Insert(slices.Clone(t.Header), at, "J/token at the energy optimum ("+where+", 95% interval)", "J/token at the SLO point")
	for i, r := range runs {
		e := runEnergy(r)
		t.Rows[i] = slices.Insert(slices.Clone(t.Rows[i]), at, optimumCell(r, e.Optimal), fjoule(e.AtSLOPoint.JPerOutputToken))
	}
	return t
}

// compareEnergyConsoleNote says what the compare console's energy table shows, within
// ConsoleWidth.
func compareEnergyConsoleNote(rate bool) string {
	if rate {
		return "(J/tok = GPU energy per output token: lowest, where, at SLO point, capacity)"
	}
	return "(J/tok = GPU energy per output token: lowest, where, at SLO point and knee)"
}

// compareEnergyConsoleTable is each run's J per output token at the energy optimum (and where),
// at the SLO point and at the knee (an arrival-rate run's capacity), and its idle power.
func compareEnergyConsoleTable(runs []*analysis.Result, labels []string) table {
	where, knee := "at N", "J/tok knee"
	if runs[0].Mode.IsRate() {
		where, knee = "at req/s", "J/tok cap"
	}
	t := table{Header: []string{"run", "J/tok min", where, "J/tok SLO", knee, "idle W"}}
	for i, r := range runs {
		e := runEnergy(r)
		t.Rows = append(t.Rows, []string{labels[i], fjoule(e.Optimal.JPerOutputToken), placeCell(r, e.Optimal.X),
			fjoule(e.AtSLOPoint.JPerOutputToken), fjoule(e.AtKnee.JPerOutputToken), fnum(e.IdleW)})
	}
	return t
}

// writeCompareEnergy writes the compare console's energy table and its note, when some run
// has energy answers.
func writeCompareEnergy(w io.Writer, runs []*analysis.Result, labels []string) error {
	if !anyEnergy(runs) {
		return nil
	}
	t := compareEnergyConsoleTable(runs, labels)
	fmt.Fprintln(w)
	if err := writeAligned(w, t, "compare console"); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, compareEnergyConsoleNote(runs[0].Mode.IsRate()))
	return err
}
