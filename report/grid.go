package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// GridScenario is one scenario of a scenario grid as its combined report shows it (DESIGN
// §5.2, §5.3).
type GridScenario struct {
	// Name is the scenario's name, and its subdirectory's.
	Name string
	// Shape is its workload's shape, "512/128" (mean prompt / output tokens requested).
	Shape string
	// Status is "finished", "interrupted", "not run", or "failed: …" / "unreachable: …"
	// saying what went wrong.
	Status string
	// Result is its analysis; nil when it has none (not run, or no level finished).
	Result *analysis.Result
}

// gridNote explains the grid table.
const gridNote = "Shape: prompt / output tokens requested. Knee: where throughput stops growing (95% interval, method, rule). SLO point: largest concurrency meeting every SLO (“≥ N”: every valid level meets them). TTFT blow-up: where TTFT starts to grow with the queue. “—”: not computed."

// gridTable is the combined report's table: per scenario its shape, knee, knee TPS, SLO point,
// max TPS, TTFT blow-up and status.
func gridTable(scs []GridScenario) table {
	t := table{Header: []string{"scenario", "shape (in/out tokens)", "knee N (95% interval, method, rule)", "knee TPS (tokens/s)",
		"SLO point N", "TPS at SLO (tokens/s)", "max TPS (tokens/s) @ N", "TTFT blow-up N", "status"}}
	for _, s := range scs {
		row := []string{s.Name, s.Shape, dash, dash, dash, dash, dash, dash, s.Status}
		if r := s.Result; r != nil {
			_, kt, _, blow := gridFigures(r)
			row[2], row[3], row[4], row[5] = kneeCell(r.Knee), kt, sloPoint(r.SLO), fnum(r.SLO.TPS)
			if r.Throughput.MaxTPS.OK() {
				row[6] = fmt.Sprintf("%s @ %d", fnum(r.Throughput.MaxTPS), r.Throughput.MaxTPSConcurrency)
			}
			row[7] = blow
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// gridFigures returns the knee N and TPS, the max TPS and the TTFT blow-up N of r as cells.
func gridFigures(r *analysis.Result) (kneeN, kneeTPS, maxTPS, blow string) {
	kneeN, kneeTPS, blow = dash, dash, dash
	if k := r.Knee; k != nil && k.Concurrency.OK() {
		kneeN, kneeTPS = fconc(k.Concurrency), fnum(k.TPS)
	}
	if b := r.TTFTBlowup; b != nil && b.Concurrency.OK() {
		blow = fconc(b.Concurrency)
	}
	return kneeN, kneeTPS, fnum(r.Throughput.MaxTPS), blow
}

// GridConsole writes the grid's table of knees for a terminal, in columns that fit
// ConsoleWidth: scenario (a name longer than 12 characters cut to 11 and "…"), shape (cut to
// 9), knee N, knee TPS, SLO point N, max TPS, TTFT blow-up N and a short status (done,
// partial, not run, down, failed; the reports say what went wrong).
func GridConsole(w io.Writer, title string, scs []GridScenario) error {
	fmt.Fprintln(w, title)
	t := table{Header: []string{"scenario", "shape", "knee N", "knee TPS", "SLO N", "max TPS", "blow-up N", "status"}}
	for _, s := range scs {
		row := []string{cut(s.Name, 12), cut(s.Shape, 9), dash, dash, dash, dash, dash, consoleStatus(s.Status)}
		if r := s.Result; r != nil {
			row[2], row[3], row[5], row[6] = gridFigures(r)
			row[4] = sloPoint(r.SLO)
		}
		t.Rows = append(t.Rows, row)
	}
	if err := writeAligned(w, t, "grid console"); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "(shape = prompt/output tokens; N = concurrency; TPS = output tokens/s)")
	return err
}

// consoleStatus is a grid status as GridConsole shows it: finished "done", interrupted
// "partial", unreachable "down", "failed: why" "failed".
func consoleStatus(status string) string {
	st, _, _ := strings.Cut(status, ":")
	switch st {
	case "finished":
		return "done"
	case "interrupted":
		return "partial"
	case "unreachable":
		return "down"
	}
	return cut(st, 8)
}

// cut shortens s to n characters, the last "…" when it was longer.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// GridMarkdown writes the grid's report.md: the table of knees, the Pareto chart (charts:
// image paths relative to report.md), and per scenario its answer and a link to its own
// report.
func GridMarkdown(w io.Writer, title string, scs []GridScenario, charts []string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# %s\n\n", mdText(title))
	mdTable(bw, gridTable(scs))
	fmt.Fprintf(bw, "\n%s\n\n", mdText(gridNote))
	mdImages(bw, charts)
	for _, s := range scs {
		fmt.Fprintf(bw, "## %s (%s)\n\n", mdText(s.Name), mdText(s.Shape))
		if s.Result == nil {
			fmt.Fprintf(bw, "%s: no analysis.\n\n", mdText(s.Status))
			continue
		}
		mdHeadline(bw, s.Result)
		fmt.Fprintf(bw, "%s\n\n", mdText(strings.Join(Answer(s.Result), " ")))
		fmt.Fprintf(bw, "Its own report: [%s/report.md](%s/report.md)\n\n", mdText(s.Name), mdURL(s.Name))
	}
	return flush(bw, "grid")
}

// GridHTML writes the grid's report.html, GridMarkdown as one self-contained page (no script,
// no external asset; the Pareto chart inlined from svgs), a section per scenario with its
// figure cards, answer and a link to its own report.html.
func GridHTML(w io.Writer, title string, scs []GridScenario, svgs map[string][]byte) error {
	charts, err := inlineCharts(svgs)
	if err != nil {
		return fmt.Errorf("report: grid html: %w", err)
	}
	t := gridTable(scs)
	lead := []section{{ID: "knees", Title: "Knees", Table: &t, Note: gridNote}}
	var secs []section
	for i, s := range scs {
		sec := section{ID: fmt.Sprintf("scenario%d", i+1), Title: s.Name + " (" + s.Shape + ")",
			Link: s.Name + "/report.html", LinkText: s.Name + "/report.html", Empty: s.Status + ": no analysis."}
		if r := s.Result; r != nil {
			sec.Sub, sec.Cards, sec.Answer = subtitle(r.Meta), cards(r), Answer(r)
		}
		secs = append(secs, sec)
	}
	p := page{Title: title, Lead: lead, Charts: charts, Sections: secs}
	return writePage(w, "grid html", p)
}
