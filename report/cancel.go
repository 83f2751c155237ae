package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// The reports of a run with user cancels (workload.cancel; analysis.CancelResult): a sentence
// in the answer, a "user cancels" column after "errors" in the level tables of report.md and
// report.html, and a block of the cancelled share per level on the console. A run without
// them shows none of it.

// cancelSentence says how many requests the users cancelled and whether the server freed
// their slots; "" without user cancels.
func cancelSentence(res *analysis.Result) string {
	c := res.Cancels
	if c == nil {
		return ""
	}
	requests := 0
	for i := range res.Levels {
		requests += res.Levels[i].Requests
	}
	share := analysis.NaN()
	if requests > 0 {
		share = analysis.Float(float64(c.UserCancelled) / float64(requests))
	}
	return fmt.Sprintf("Users cancelled %d of the %d requests measured (%s; not errors: their tokens count toward throughput, their TTFT toward TTFT): %s.",
		c.UserCancelled, requests, fpct(share), c.Statement)
}

// cancelledCell is a level's user cancels, "12 (20.0%)"; "—" without the figures.
func cancelledCell(l *analysis.Level) string {
	if l.UserCancelled == nil {
		return "—"
	}
	return strconv.Itoa(l.UserCancelled.Count) + " (" + fpct(l.UserCancelled.Share) + ")"
}

// withCancelled returns t with a "user cancels" column after its errors column when the run has
// user cancels; t as it is otherwise.
func withCancelled(t table, res *analysis.Result) table {
	at := slices.Index(t.Header, "errors") + 1
	levels := rowLevels(res)
	if res.Cancels == nil || at == 0 || len(levels) != len(t.Rows) {
		return t
	}
	t.Header = slices.Insert(slices.Clone(t.Header), at, "user cancels")
	for i := range levels {
		t.Rows[i] = slices.Insert(slices.Clone(t.Rows[i]), at, cancelledCell(&levels[i]))
	}
	return t
}

// consoleCancels writes the console's block of user cancels: the share of each level.
func consoleCancels(w io.Writer, res *analysis.Result, p func(first, hang, s string)) {
	if res.Cancels == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "User cancels (workload.cancel; not errors):")
	for _, l := range sortedLevels(res) {
		key := fmt.Sprintf("concurrency %d", l.Concurrency)
		if l.IsRate() {
			key = frate(l.OfferedRPS) + " requests/s"
		}
		p("  ", "    ", fmt.Sprintf("%s: %s of %d requests", key, cancelledCell(&l), l.Requests))
	}
}

// ttftCell is a TTFT percentile v of l, "≥ 812" where users cancelled more than 5% of its TTFT
// population before a first token (analysis.UserCancelled TTFTLowerBound): a lower bound.
func ttftCell(l *analysis.Level, v analysis.Float) string {
	if c := l.UserCancelled; c != nil && c.TTFTLowerBound && v.OK() {
		return "≥ " + fnum(v)
	}
	return fnum(v)
}
