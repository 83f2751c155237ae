package report

import (
	"fmt"
	"io"

	"github.com/kneecap/kneecap/analysis"
)

// CompareConsoleOptions lay out the compare console.
type CompareConsoleOptions struct {
	// Wide shows every column of compare.md's tables (model, knee interval, method and rule,
	// efficient point, why a figure was not checked, …); by default the tables show the
	// columns that fit ConsoleWidth for run labels of up to 10 characters.
	Wide bool
}

// CompareConsole writes the side-by-side table of several runs for a terminal, then the
// regression gate (analysis.CompareGate) when gate is not nil, in the default columns
// (CompareConsoleWith).
func CompareConsole(w io.Writer, runs []*analysis.Result, labels []string, gate *analysis.GateReport) error {
	return CompareConsoleWith(w, runs, labels, gate, CompareConsoleOptions{})
}

// compareConsoleNote says what the default compare table's short headers mean.
const compareConsoleNote = "(N = concurrency; TPS = output tokens/s; --wide for every column)"

// rateCompareConsoleNote is compareConsoleNote for arrival-rate runs.
const rateCompareConsoleNote = "(rates in requests/s; TPS = output tokens/s; --wide for every column)"

// CompareConsoleWith writes the side-by-side table of several runs, then the regression gate
// when gate is not nil: every column when o.Wide, else the columns that fit ConsoleWidth and,
// when some run read GPU telemetry, each run's J/token in a table of its own.
func CompareConsoleWith(w io.Writer, runs []*analysis.Result, labels []string, gate *analysis.GateReport, o CompareConsoleOptions) error {
	if err := checkCompare("compare console", runs, labels); err != nil {
		return err
	}
	tables := []table{compareTable(runs, labels)}
	if !o.Wide {
		tables[0] = compareConsoleTable(runs, labels)
	}
	if gate != nil {
		tables = append(tables, gateTable(gate, labels))
		if !o.Wide {
			tables[1] = gateConsoleTable(tables[1], gate)
		}
	}
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintf(w, "\nregression gate: each run against %s, allowed fall %s\n", labels[0], fpct(analysis.Float(gate.MaxDrop)))
		}
		if err := writeAligned(w, t, "compare console"); err != nil {
			return err
		}
		if i == 0 && !o.Wide {
			note := compareConsoleNote
			if runs[0].Mode.IsRate() {
				note = rateCompareConsoleNote
			}
			fmt.Fprintln(w, note)
			if err := writeCompareEnergy(w, runs, labels); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareConsoleTable is compareTable in the columns that fit ConsoleWidth: knee N and TPS,
// max TPS, the SLO point and its TPS, what binds, the TTFT blow-up and the warnings.
func compareConsoleTable(runs []*analysis.Result, labels []string) table {
	if runs[0].Mode.IsRate() {
		return rateCompareConsoleTable(runs, labels)
	}
	t := table{Header: []string{"run", "knee N", "knee TPS", "max TPS", "SLO N", "SLO TPS", "binds", "blow-up N", "warn"}}
	for i, r := range runs {
		kneeN, kneeTPS := dash, dash
		if k := r.Knee; k != nil && k.Concurrency.OK() {
			kneeN, kneeTPS = fconc(k.Concurrency), fnum(k.TPS)
		}
		blow := dash
		if b := r.TTFTBlowup; b != nil && b.Concurrency.OK() {
			blow = fconc(b.Concurrency)
		}
		t.Rows = append(t.Rows, []string{labels[i], kneeN, kneeTPS, fnum(r.Throughput.MaxTPS), sloPoint(r.SLO), fnum(r.SLO.TPS),
			bindsCell(r.SLO.Limit, sloBeyond(r.SLO)), blow, fmt.Sprint(len(r.Warnings))})
	}
	return t
}

// rateCompareConsoleTable is rateCompareTable in the columns that fit ConsoleWidth.
func rateCompareConsoleTable(runs []*analysis.Result, labels []string) table {
	t := table{Header: []string{"run", "capacity (95%)", "SLO", "goodput", "binds", "blow-up", "max TPS", "warn"}}
	for i, r := range runs {
		rr := rateResult(r)
		slo := floorConc(rr.SLORPS)
		beyond := rr.SLORPS.OK() && r.SLO.Limit == ""
		if beyond {
			slo = "≥ " + frate(rr.SLORPS)
		}
		t.Rows = append(t.Rows, []string{labels[i], capacityCell(rr), slo, frate(rr.SLOGoodputRPS), bindsCell(r.SLO.Limit, beyond),
			frate(rr.TTFTBlowupRPS), fnum(r.Throughput.MaxTPS), fmt.Sprint(len(r.Warnings))})
	}
	return t
}

// bindsCell is what binds at the SLO point in a few characters: "TTFT p95", "capacity",
// "none" when every valid level meets the SLOs (beyond), else "—".
func bindsCell(limit string, beyond bool) string {
	switch {
	case beyond:
		return "none"
	case limit == "capacity":
		return limit
	case limitName(limit) != "":
		return limitName(limit)
	}
	return dash
}

// gateConsoleTable is the gate table t of g with each verdict alone ("regressed ✗", "ok",
// "not checked"), the allowed fall being in the line above it and the reasons in compare.md.
func gateConsoleTable(t table, g *analysis.GateReport) table {
	out := table{Header: t.Header, Class: t.Class}
	k := 0
	for _, cs := range g.Checks {
		for _, c := range cs {
			row := append([]string(nil), t.Rows[k]...)
			row[len(row)-1] = c.Verdict
			if c.Verdict == analysis.GateRegressed {
				row[len(row)-1] = "regressed ✗"
			}
			out.Rows = append(out.Rows, row)
			k++
		}
	}
	return out
}
