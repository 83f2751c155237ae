package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kneecap/kneecap/analysis"
)

// compareTable is the side-by-side table of several runs: knee with its interval, maximum
// TPS, SLO point and TTFT blow-up per run.
func compareTable(runs []*analysis.Result, labels []string) table {
	t := table{Header: []string{"run", "model", "knee N (95% interval, method)", "knee TPS (tokens/s)",
		"max TPS (tokens/s) @ N", "SLO point N", "TPS at SLO (tokens/s)", "binding SLO", "TTFT blow-up N (method)", "warnings"}}
	for i, r := range runs {
		knee, kneeTPS := dash, dash
		if k := r.Knee; k != nil && k.Concurrency.OK() {
			knee = fconc(k.Concurrency)
			if k.Interval[0].OK() && k.Interval[1].OK() {
				knee += fmt.Sprintf(" (%s–%s", fnum(k.Interval[0]), fnum(k.Interval[1]))
			} else {
				knee += " (—"
			}
			if k.Method != "" {
				knee += ", " + k.Method
			}
			knee += ")"
			kneeTPS = fnum(k.TPS)
		}
		maxTPS := dash
		if r.Throughput.MaxTPS.OK() {
			maxTPS = fmt.Sprintf("%s @ %d", fnum(r.Throughput.MaxTPS), r.Throughput.MaxTPSConcurrency)
		}
		limit := limitNames[r.SLO.Limit]
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
				blow += " (" + b.Method + ")"
			}
		}
		model := r.Meta.Model
		if model == "" {
			model = dash
		}
		t.Rows = append(t.Rows, []string{labels[i], model, knee, kneeTPS, maxTPS, sloPoint(r.SLO),
			fnum(r.SLO.TPS), limit, blow, fmt.Sprint(len(r.Warnings))})
	}
	return t
}

func checkCompare(op string, runs []*analysis.Result, labels []string) error {
	if len(runs) != len(labels) {
		return fmt.Errorf("report: %s: %d labels for %d runs", op, len(labels), len(runs))
	}
	for i, r := range runs {
		if r == nil {
			return fmt.Errorf("report: %s: run %s is nil", op, labels[i])
		}
	}
	return nil
}

// CompareConsole writes the side-by-side table of several runs for a terminal.
func CompareConsole(w io.Writer, runs []*analysis.Result, labels []string) error {
	if err := checkCompare("compare console", runs, labels); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	t := compareTable(runs, labels)
	fmt.Fprintln(tw, strings.Join(t.Header, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("report: compare console: %w", err)
	}
	return nil
}

// Compare writes compare.md: the side-by-side table of several runs, the charts (image paths
// relative to compare.md), each run's answer, and every run's warnings.
func Compare(w io.Writer, runs []*analysis.Result, labels []string, charts []string) error {
	if err := checkCompare("compare", runs, labels); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# kneecap comparison: %s\n\n", mdText(strings.Join(labels, " vs ")))
	mdTable(bw, compareTable(runs, labels))
	fmt.Fprint(bw, "\nKnee: smallest concurrency where one more doubling adds less than the knee gain in throughput (fitted curve, bootstrap 95% interval). SLO point: largest concurrency meeting every SLO; “≥ N”: every valid level meets the SLOs, so the limit lies beyond the largest level N (TPS at SLO is then that level's). “—”: not computed.\n\n")
	mdImages(bw, charts)
	for i, r := range runs {
		fmt.Fprintf(bw, "## %s\n\n", mdText(labels[i]))
		if s := subtitle(r.Meta); s != "" {
			fmt.Fprintf(bw, "%s\n\n", mdText(s))
		}
		fmt.Fprintf(bw, "%s\n\n", mdText(strings.Join(Answer(r), " ")))
		if len(r.Warnings) > 0 {
			fmt.Fprint(bw, "Warnings:\n\n")
			for j, s := range r.Warnings {
				fmt.Fprintf(bw, "%d. %s\n", j+1, mdText(s))
			}
			fmt.Fprintln(bw)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: compare: %w", err)
	}
	return nil
}
