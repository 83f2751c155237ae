package report

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// Markdown writes report.md: the headline, one line an answer (answerLines), then the method
// text in one paragraph, the charts (charts are image paths
// relative to the report, embedded in order), the level table with units, the fitted models,
// the method notes with the formulas of DESIGN §1, the validity checks per level with the
// identities' measured error, the server metrics per level when they were scraped, and the
// warnings as footnotes.
func Markdown(w io.Writer, res *analysis.Result, charts []string) error {
	if res == nil {
		return fmt.Errorf("report: markdown: nil result")
	}
	bw := bufio.NewWriter(w)
	title := "kneecap report"
	if res.Meta.Name != "" {
		title += ": " + res.Meta.Name
	}
	fmt.Fprintf(bw, "# %s\n\n", mdText(title))
	if s := subtitle(res.Meta); s != "" {
		fmt.Fprintf(bw, "%s\n\n", mdText(s))
	}
	if res.Meta.Source != "" {
		fmt.Fprintf(bw, "Source: `%s`", strings.ReplaceAll(res.Meta.Source, "`", "'"))
		if res.Meta.StopReason != "" {
			fmt.Fprintf(bw, " · stopped: %s", mdText(res.Meta.StopReason))
		}
		fmt.Fprint(bw, "\n\n")
	}
	if p := provenance(res.Meta); p != "" {
		fmt.Fprintf(bw, "%s\n\n", mdText(p))
	}
	mdHeadline(bw, res)
	para := mdText(strings.Join(Answer(res), " "))
	if n := len(res.Warnings); n > 0 {
		var refs []string
		for i := range res.Warnings {
			refs = append(refs, fmt.Sprintf("[^%d]", i+1))
		}
		para += fmt.Sprintf(" %d warning(s): %s.", n, strings.Join(refs, " "))
	}
	fmt.Fprintf(bw, "%s\n\n", para)

	if len(charts) > 0 {
		fmt.Fprint(bw, "## Charts\n\n")
		mdImages(bw, charts)
	}

	if len(res.Levels) == 0 {
		fmt.Fprint(bw, "## Levels\n\nNo levels were measured.\n\n")
	} else {
		mdSection(bw, "Levels", levelTable(res), levelsNote(res))
	}
	if hasLengths(res) && !whole(res) {
		mdSection(bw, "Token lengths", lengthsTable(res), lengthsNote)
	}
	if l, why := turnsLevel(res); l != nil {
		mdSection(bw, "By turn", turnsTable(l), turnsNote(l, why))
	}
	if mixed(res) {
		mdSection(bw, "By model", modelsTable(res), modelsNote)
	}

	if res.Energy != nil {
		mdSection(bw, "Energy", energyTable(res), energyNote(res))
	}
	if fits := fitNotes(res); len(fits) > 0 {
		fmt.Fprint(bw, "## Fitted models\n\n")
		for _, f := range fits {
			fmt.Fprintf(bw, "- %s\n", mdText(f))
		}
		fmt.Fprintln(bw)
	}

	fmt.Fprint(bw, "## Method\n\n")
	mdTable(bw, methodTable(res))
	fmt.Fprintln(bw)

	if len(res.Levels) > 0 {
		mdSection(bw, "Validity checks", validityTable(res), validityNote(res))
	}
	if hasServer(res) {
		mdSection(bw, "Server metrics", serverTable(res), serverNote)
	}
	mdList(bw, "## Warnings\n\n", "[^%d]: %s\n", res.Warnings)
	return flush(bw, "markdown")
}

// mdHeadline writes res's headline as a list, one answer an item (answerLines), then a
// blank line.
func mdHeadline(w io.Writer, res *analysis.Result) {
	for _, l := range answerLines(res) {
		fmt.Fprintf(w, "- **%s:** %s\n", mdText(l.Label), mdText(l.text()))
	}
	fmt.Fprintln(w)
}

// mdSection writes a section of the report: its heading, table t and the note under it.
func mdSection(w io.Writer, heading string, t table, note string) {
	fmt.Fprintf(w, "## %s\n\n", heading)
	mdTable(w, t)
	fmt.Fprintf(w, "\n%s\n\n", mdText(note))
}

// mdList writes items, when there are any, after head: each by format, given its 1-based
// number and its escaped text (footnotes "[^%d]: %s\n", a numbered list "%d. %s\n").
func mdList(w io.Writer, head, format string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprint(w, head)
	for i, s := range items {
		fmt.Fprintf(w, format, i+1, mdText(s))
	}
	fmt.Fprintln(w)
}

// flush flushes bw; its error names the report op writes ("report: markdown: …").
func flush(bw *bufio.Writer, op string) error {
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: %s: %w", op, err)
	}
	return nil
}

// methodTable lists the metric definitions and formulas, first the clock the latencies are on
// when the levels had records; TTFA follows TTFT when some request of res reasoned first.
func methodTable(res *analysis.Result) table {
	var t table
	if res.Mode.IsRate() {
		t = rateMethodTable()
	} else {
		t = table{Header: []string{"quantity", "definition"}, Class: "text"}
		for _, m := range methodNotes {
			t.Rows = append(t.Rows, []string{m[0], m[1]})
			if m[0] == "TTFT" && reasoned(res) {
				t.Rows = append(t.Rows, []string{ttfaNote[0], ttfaNote[1]})
			}
		}
	}
	if whole(res) {
		t.Rows = wholeMethodRows(t.Rows)
	}
	if s := clientEffectNote(res); s != "" {
		t.Rows = append([][]string{{"client effect", s + ": the most the load generator's lateness can have moved each number (DESIGN §3.3)"}}, t.Rows...)
	}
	if s := clockNote(res); s != "" {
		t.Rows = append([][]string{{"clock", s}}, t.Rows...)
	}
	return t
}

// levelsNote is the note under the level table.
func levelsNote(res *analysis.Result) string {
	if res.Mode.IsRate() {
		return rateLevelsNote
	}
	return "Latencies are over requests sent inside the measurement window; “—” marks a value that could not be computed; ✗ marks a level excluded from the fits."
}

// validityNote is the note under the validity table.
func validityNote(res *analysis.Result) string {
	if res.Mode.IsRate() {
		return "An achieved rate more than max(2%, 3 ÷ √(offered × window)) off the offered rate, and a schedule lag p99 above max(1 ms, 1% of TTFT p50) at a sustainable level, are flagged ✗ with a warning but keep the level; not steady or a Little's-law error above 10% (both checked only while the level is sustained), client-bound and an error rate above max_error_rate exclude it. The identity column shows the relative error between its two sides (✗ above 10%)."
	}
	return "Identity columns show the relative error between the two sides, over per-level means (flagged ✗ above 10%)."
}

// mdTable writes a GitHub-flavoured Markdown table.
func mdTable(w io.Writer, t table) {
	cells := func(row []string) string {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = mdCell(c)
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	fmt.Fprint(w, cells(t.Header))
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	fmt.Fprint(w, "|"+strings.Join(sep, "|")+"|\n")
	for _, r := range t.Rows {
		fmt.Fprint(w, cells(r))
	}
}

// mdText escapes characters that Markdown would interpret in running text.
func mdText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

// mdCell escapes a table cell: as mdText, plus pipes and line breaks.
func mdCell(s string) string {
	s = mdText(s)
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// mdImages embeds each chart (an image path relative to the document), its base name as the
// alt text.
func mdImages(w io.Writer, charts []string) {
	for _, c := range charts {
		alt := strings.ReplaceAll(strings.TrimSuffix(path.Base(c), path.Ext(c)), "_", " ")
		fmt.Fprintf(w, "![%s](%s)\n\n", mdText(alt), mdURL(c))
	}
}

// mdURL escapes a relative link target.
func mdURL(p string) string {
	r := strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29")
	return r.Replace(p)
}
