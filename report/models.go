package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/rivo/uniseg"

	"github.com/kneecap/kneecap/analysis"
)

// The "By model" section of a run that mixes models (workload.models, DESIGN §5.2): each
// level's requests per model (levels[].by_model). The Markdown and HTML reports show every
// level, a capacity reviewer reading how each model fares as the load grows; the console
// shows the level nearest the knee (nearKnee), as its by-turn table does.

// hasModels reports whether a level of res summarises its requests per model.
func hasModels(l *analysis.Level) bool { return len(l.ByModel) > 0 }

// mixed reports whether some level of res mixes models.
func mixed(res *analysis.Result) bool {
	for i := range res.Levels {
		if hasModels(&res.Levels[i]) {
			return true
		}
	}
	return false
}

// modelsTable is the by-model table: one row per model of each level in the level table's
// order, an excluded level and one run again marked; an embeddings run's (Whole) has its
// yardstick's columns, latency p50 and p95 and input TPS.
func modelsTable(res *analysis.Result) table {
	t := table{Header: []string{keyHeader(res), "model", "requests", "share", "TTFT p50 (ms)", "TTFT p95 (ms)",
		"TPOT p50 (ms)", "TPOT p95 (ms)", "E2E p95 (ms)", "output TPS"}}
	if res.Whole() {
		t.Header = []string{keyHeader(res), "model", "requests", "share", "latency p50 (ms)", "latency p95 (ms)", "input TPS"}
	}
	for _, l := range rowLevels(res) {
		key := levelKey(&l)
		switch {
		case l.Superseded:
			key += " (rerun)" // its retry, another row, stands for it
		case !l.Valid:
			key += " (excluded)"
		}
		for _, m := range l.ByModel {
			row := []string{key, m.Model, requestsCell(m), fpct(m.Share), fnum(m.TTFTP50), fnum(m.TTFTP95),
				fnum(m.TPOTP50), fnum(m.TPOTP95), fnum(m.E2EP95), fnum(m.OutputTPS)}
			if res.Whole() {
				row = append(row[:4], fnum(m.E2EP50), fnum(m.E2EP95), fnum(m.InputTPS))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// requestsCell is a model's requests, with its errors when it has any: "120", "120 (3 errors)".
func requestsCell(m analysis.ModelStats) string {
	if m.Errors > 0 {
		return fmt.Sprintf("%d (%d errors)", m.Requests, m.Errors)
	}
	return strconv.Itoa(m.Requests)
}

// modelsNote says what the by-model table holds.
const modelsNote = "Each level's requests by the model they named (workload.models): the requests of the level's latency population " +
	"(sent inside its measurement window; on an arrival-rate level, its window's arrivals), their share of the level's, " +
	"and the successful ones' latencies, summarised as the level's are; output TPS is the model's part of the level's. " +
	"The level's own percentiles pool every model: a slower model (a LoRA adapter) is seen here, and a warning names it " +
	"when its TTFT p95 is more than twice another's."

// consoleModels writes the by-model table of the console summary at the level nearest the
// knee, when the run mixes models, its lines within width (columnLines; 0: no limit).
func consoleModels(w io.Writer, res *analysis.Result, width int, p func(first, hang, s string)) {
	l, why := nearKnee(res, hasModels)
	if l == nil {
		return
	}
	fmt.Fprintln(w)
	p("", "  ", fmt.Sprintf("By model (%s, %s):", res.Axis().At(levelKey(l)), why))
	name := modelColumn(width)
	widths := []int{name, 8, 6, 9, 9, 9, 9, 9}
	head := []string{"model", "requests", "share", "TTFT p50", "TTFT p95", "TPOT p50", "TPOT p95", "out TPS"}
	row := func(m analysis.ModelStats) []string {
		return []string{consoleName(m.Model, name), strconv.Itoa(m.Requests), fpct(m.Share),
			fnum(m.TTFTP50), fnum(m.TTFTP95), fnum(m.TPOTP50), fnum(m.TPOTP95), fnum(m.OutputTPS)}
	}
	if res.Whole() {
		widths, head = widths[:6], []string{"model", "requests", "share", "lat p50", "lat p95", "in TPS"}
		row = func(m analysis.ModelStats) []string {
			return []string{consoleName(m.Model, name), strconv.Itoa(m.Requests), fpct(m.Share),
				fnum(m.E2EP50), fnum(m.E2EP95), fnum(m.InputTPS)}
		}
	}
	fmt.Fprint(w, columnLines(head, widths, 1, width))
	for _, m := range l.ByModel {
		fmt.Fprint(w, columnLines(row(m), widths, 1, width))
	}
	p("  ", "   ", "(latencies in ms; every level's in report.md and analysis.json levels[].by_model)")
}

// modelColumn is the width of the console's model column in a terminal of width columns (0:
// no limit): 20, less where the two-space indent and 20 would pass the terminal, 8 at least.
func modelColumn(width int) int {
	if width <= 0 {
		return 20
	}
	return max(8, min(20, width-2))
}

// consoleName clips a model name to n terminal columns (displayWidth: a wide character counts
// two) for a console column, ending a clipped one in "…", and drops control characters, so a
// name cannot move the terminal's cursor.
func consoleName(s string, n int) string {
	var clusters []string
	total := 0
	for state := -1; s != ""; {
		var c string
		var w int
		c, s, w, state = uniseg.FirstGraphemeClusterInString(s, state)
		if strings.ContainsFunc(c, unicode.IsControl) {
			continue
		}
		clusters = append(clusters, c)
		total += w
	}
	if total <= n {
		return strings.Join(clusters, "")
	}
	var b strings.Builder
	w := 0
	for _, c := range clusters {
		cw := displayWidth(c)
		if w+cw > n-1 {
			break
		}
		b.WriteString(c)
		w += cw
	}
	return b.String() + "…"
}
