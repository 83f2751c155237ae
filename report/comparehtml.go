package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// closedCompareNote explains the closed-loop compare table (compare.md and compare.html).
const closedCompareNote = "Knee: where throughput stops growing, by its rule: plateau onset, the breakpoint of a sharp-knee fit (batch slot limit S or hinge breakpoint) whose plateau was measured; marginal gain, the efficient point. Efficient point: smallest concurrency where one more doubling adds less than the knee gain in throughput. Both on the best fit, with bootstrap 95% intervals. SLO point: largest concurrency meeting every SLO; “≥ N”: every valid level meets the SLOs, so the limit lies beyond the largest level N (TPS at SLO is then that level's). “—”: not computed."

// compareNote is the note under the compare table of runs of res's mode.
func compareNote(res *analysis.Result) string {
	if res.Mode.IsRate() {
		return rateCompareNote
	}
	return closedCompareNote
}

// gateIntro is the paragraph that opens the regression gate section.
func gateIntro(gate *analysis.GateReport, labels []string) string {
	return fmt.Sprintf("Each run against %s (the baseline): a figure regresses when it falls more than %s below the baseline's. %d regressed. A figure either run could not compute is unknown; “≥ N” is a lower bound (every valid level met the SLOs), which decides only what it can.",
		labels[0], fpct(analysis.Float(gate.MaxDrop)), gate.Regressions())
}

// CompareHTML writes compare.html, compare.md as one self-contained page without script
// (DESIGN §5.8): the side-by-side table, the regression gate when gate is not nil, the
// overlay charts inlined from svgs (compare_throughput, compare_latency), then each run with
// its figure cards, answer and warnings.
func CompareHTML(w io.Writer, runs []*analysis.Result, labels []string, svgs map[string][]byte, gate *analysis.GateReport) error {
	if err := checkCompare("compare html", runs, labels); err != nil {
		return err
	}
	charts, err := inlineCharts(svgs)
	if err != nil {
		return fmt.Errorf("report: compare html: %w", err)
	}
	t := compareTable(runs, labels)
	lead := []section{{ID: "runs", Title: "Side by side", Table: &t, Note: compareNote(runs[0])}}
	if gate != nil {
		gt := gateTable(gate, labels)
		lead = append(lead, section{ID: "gate", Title: "Regression gate", Text: []string{gateIntro(gate, labels)}, Table: &gt, Items: gate.Warnings})
	}
	var runSecs []section
	for i, r := range runs {
		runSecs = append(runSecs, section{ID: fmt.Sprintf("run%d", i+1), Title: labels[i], Sub: subtitle(r.Meta),
			Cards: cards(r), Answer: Answer(r), Warnings: numberedList(fmt.Sprintf("run%d-w", i+1), r.Warnings)})
	}
	p := page{Title: "kneecap comparison: " + strings.Join(labels, " vs "), Lead: lead, Charts: charts, Sections: runSecs}
	return writePage(w, "compare html", p)
}
