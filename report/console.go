package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kneecap/kneecap/analysis"
)

// Console writes the summary printed at the end of sweep and analyze: the answer first, one
// sentence a line, then a compact level table, then the warnings numbered.
func Console(w io.Writer, res *analysis.Result) error {
	if res == nil {
		return fmt.Errorf("report: console: nil result")
	}
	bw := bufio.NewWriter(w)
	head := "kneecap"
	if res.Meta.Name != "" {
		head += " · " + res.Meta.Name
	}
	if s := subtitle(res.Meta); s != "" {
		head += " · " + s
	}
	fmt.Fprintln(bw, head)
	fmt.Fprintln(bw)
	for _, s := range Answer(res) {
		fmt.Fprintln(bw, "  "+s)
	}
	fmt.Fprintln(bw)
	if len(res.Levels) > 0 {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
		t := consoleTable(res)
		fmt.Fprintln(tw, strings.Join(t.Header, "\t")+"\t")
		for _, r := range t.Rows {
			fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("report: console: %w", err)
		}
		if isRate(res) {
			fmt.Fprintln(bw, rateConsoleNote)
		} else {
			fmt.Fprintln(bw, "  (tok/s = output tokens/s ±95% CI; QPS = requests/s; latencies in ms; ✗ = excluded from fits)")
		}
		if hasLengths(res) {
			fmt.Fprintln(bw, "  (ISL, OSL = mean prompt and output tokens per request as the server counted them; ≠N: more than 5% off the N requested)")
		}
		first := true
		for _, l := range sortedLevels(res) {
			if len(l.ErrorClasses) == 0 {
				continue
			}
			if first {
				fmt.Fprintln(bw)
				fmt.Fprintln(bw, "Errors by class:")
				first = false
			}
			if l.IsRate() {
				fmt.Fprintf(bw, "  %s requests/s: %s\n", frate(l.OfferedRPS), errorClasses(l.ErrorClasses))
			} else {
				fmt.Fprintf(bw, "  concurrency %d: %s\n", l.Concurrency, errorClasses(l.ErrorClasses))
			}
		}
	} else {
		fmt.Fprintln(bw, "  no levels measured")
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "Warnings:")
		for i, s := range res.Warnings {
			fmt.Fprintf(bw, "  %d. %s\n", i+1, s)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: console: %w", err)
	}
	return nil
}
