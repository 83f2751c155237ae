package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// compareTable is the side-by-side table of several runs: knee with its interval, method and
// rule, the efficient point, maximum TPS, SLO point and TTFT blow-up per run, and J/token when
// some run read GPU telemetry (withCompareEnergy).
func compareTable(runs []*analysis.Result, labels []string) table {
	if len(runs) > 0 && runs[0].Mode.IsRate() {
		return rateCompareTable(runs, labels)
	}
	t := table{Header: []string{"run", "model", "knee N (95% interval, method, rule)", "knee TPS (tokens/s)", "efficient point N (95% interval)",
		"max TPS (tokens/s) @ N", "SLO point N", "TPS at SLO (tokens/s)", "binding SLO", "TTFT blow-up N (method)", "warnings"}}
	for i, r := range runs {
		kneeTPS := dash
		if k := r.Knee; k != nil && k.Concurrency.OK() {
			kneeTPS = fnum(k.TPS)
		}
		maxTPS := dash
		if r.Throughput.MaxTPS.OK() {
			maxTPS = fmt.Sprintf("%s @ %d", fnum(r.Throughput.MaxTPS), r.Throughput.MaxTPSConcurrency)
		}
		limit := limitName(r.SLO.Limit)
		switch {
		case sloBeyond(r.SLO):
			limit = "none: all valid levels meet it"
		case limit == "":
			limit = dash
		}
		blow := dash
		if b := r.TTFTBlowup; b != nil && b.Concurrency.OK() {
			blow = fconc(b.Concurrency)
			if b.Method != "" {
				blow += " (" + b.Method.Label() + ")"
			}
		}
		model := r.Meta.Model
		if model == "" {
			model = dash
		}
		t.Rows = append(t.Rows, []string{labels[i], model, kneeCell(r.Knee), kneeTPS, efficientCell(r.EfficientPoint), maxTPS, sloPoint(r.SLO),
			fnum(r.SLO.TPS), limit, blow, fmt.Sprint(len(r.Warnings))})
	}
	return withCompareEnergy(t, runs)
}

// checkCompare validates the arguments of the comparison writer op (analysis.Comparable).
func checkCompare(op string, runs []*analysis.Result, labels []string) error {
	if err := analysis.Comparable(runs, labels); err != nil {
		return fmt.Errorf("report: %s: %w", op, err)
	}
	return nil
}

var gateNames = map[string]string{
	"max_tps": "max TPS (tokens/s)", "knee_concurrency": "knee N", "knee_tps": "knee TPS (tokens/s)",
	"slo_concurrency": "SLO point N", "slo_tps": "TPS at SLO (tokens/s)", "slo_goodput_qps": "goodput at SLO (req/s)",
	"ttft_blowup_concurrency": "TTFT blow-up N",
	"capacity_rps":            "capacity (req/s)", "capacity_tps": "capacity TPS (tokens/s)", "slo_rps": "SLO point (req/s)",
	"slo_goodput_rps": "goodput at SLO (req/s)", "ttft_blowup_rps": "TTFT blow-up (req/s)",
}

// gateTable lists every check of every run against the baseline; a regression is marked ✗.
func gateTable(g *analysis.GateReport, labels []string) table {
	t := table{Header: []string{"run", "figure", labels[0] + " (baseline)", "run", "change", "verdict"}, Class: "text"}
	val := func(v analysis.Float, atLeast bool) string {
		if atLeast && v.OK() {
			return "≥ " + fconc(v)
		}
		return fconc(v)
	}
	for i, cs := range g.Checks {
		for _, c := range cs {
			verdict := c.Verdict
			switch {
			case c.Verdict == analysis.GateRegressed:
				verdict = fmt.Sprintf("regressed ✗ (fell more than %s)", fpct(analysis.Float(g.MaxDrop)))
			case c.Why != "":
				verdict += ": " + c.Why
			}
			change := dash
			if c.Change.OK() {
				change = fmt.Sprintf("%+.1f%%", 100*float64(c.Change))
			}
			name := gateNames[c.Metric]
			if name == "" {
				name = c.Metric
			}
			t.Rows = append(t.Rows, []string{labels[i+1], name, val(c.Base, c.BaseAtLeast), val(c.Run, c.RunAtLeast), change, verdict})
		}
	}
	return t
}

// Compare writes compare.md: the side-by-side table of several runs, the regression gate
// (when gate is not nil), the charts (image paths relative to compare.md), each run's answer,
// and every run's warnings.
func Compare(w io.Writer, runs []*analysis.Result, labels []string, charts []string, gate *analysis.GateReport) error {
	if err := checkCompare("compare", runs, labels); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# kneecap comparison: %s\n\n", mdText(strings.Join(labels, " vs ")))
	mdTable(bw, compareTable(runs, labels))
	fmt.Fprintf(bw, "\n%s\n\n", mdText(compareNote(runs[0])))
	if gate != nil {
		fmt.Fprintf(bw, "## Regression gate\n\n%s\n\n", mdText(gateIntro(gate, labels)))
		mdTable(bw, gateTable(gate, labels))
		fmt.Fprintln(bw)
		for _, w := range gate.Warnings {
			fmt.Fprintf(bw, "Warning: %s\n\n", mdText(w))
		}
	}
	mdImages(bw, charts)
	for i, r := range runs {
		fmt.Fprintf(bw, "## %s\n\n", mdText(labels[i]))
		if s := subtitle(r.Meta); s != "" {
			fmt.Fprintf(bw, "%s\n\n", mdText(s))
		}
		mdHeadline(bw, r)
		fmt.Fprintf(bw, "%s\n\n", mdText(strings.Join(Answer(r), " ")))
		mdList(bw, "Warnings:\n\n", "%d. %s\n", r.Warnings)
	}
	return flush(bw, "compare")
}

// rateCompareTable is the side-by-side table of arrival-rate runs: capacity with its
// interval, the SLO point and goodput there, the TTFT blow-up rate and the maximum TPS.
func rateCompareTable(runs []*analysis.Result, labels []string) table {
	t := table{Header: []string{"run", "model", "capacity (req/s, 95% interval)", "capacity TPS (tokens/s)", "SLO point (req/s)",
		"goodput at SLO (req/s)", "binding SLO", "TTFT blow-up (req/s)", "max TPS (tokens/s) @ req/s", "warnings"}}
	for i, r := range runs {
		rr := rateResult(r)
		capCell := capacityCell(rr)
		slo := floorConc(rr.SLORPS)
		limit := limitName(r.SLO.Limit)
		switch {
		case rr.SLORPS.OK() && r.SLO.Limit == "":
			slo, limit = "≥ "+frate(rr.SLORPS), "none: all valid levels meet it"
		case r.SLO.Limit == "capacity":
			limit = "the capacity"
		case limit == "":
			limit = dash
		}
		blow := frate(rr.TTFTBlowupRPS)
		if rr.TTFTBlowupMethod != "" && rr.TTFTBlowupRPS.OK() {
			blow += " (" + rr.TTFTBlowupMethod.Label() + ")"
		}
		maxTPS := dash
		if r.Throughput.MaxTPS.OK() {
			maxTPS = fmt.Sprintf("%s @ %s", fnum(r.Throughput.MaxTPS), frate(rr.MaxTPSRPS))
		}
		model := r.Meta.Model
		if model == "" {
			model = dash
		}
		t.Rows = append(t.Rows, []string{labels[i], model, capCell, fnum(rr.CapacityTPS), slo, frate(rr.SLOGoodputRPS), limit, blow, maxTPS,
			fmt.Sprint(len(r.Warnings))})
	}
	return withCompareEnergy(t, runs)
}

// capacityCell is the capacity of an arrival-rate run with its bound and 95% interval:
// "20.8 (19.9–20.9)", "≥ 22.0".
func capacityCell(rr *analysis.RateResult) string {
	c := frate(rr.CapacityRPS)
	switch rr.CapacityBound {
	case "at_least":
		c = "≥ " + c
	case "at_most":
		c += " (below every level)"
	}
	if iv := rr.CapacityInterval; iv[0].OK() && iv[1].OK() {
		lo, hi := fspan(iv[0], iv[1])
		c += fmt.Sprintf(" (%s–%s)", lo, hi)
	}
	return c
}

// rateCompareNote explains the columns of rateCompareTable.
const rateCompareNote = "Capacity: the maximum sustainable rate, where the completion rate of the unsustained levels puts it between the last sustained and the first unsustained offered rate, with its 95% interval; “≥ x”: every level sustained its rate. SLO point: largest offered rate meeting every SLO at a sustained level, never above the capacity. Latencies from the scheduled arrival. “—”: not computed."
