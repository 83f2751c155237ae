package report

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// The "By turn" section of a run with multi-turn sessions (workload.sessions): TTFT and the
// history's length by turn index, at one level (DESIGN §5.2).

// turnsLevel returns the level the by-turn section shows and why it was chosen (nearKnee);
// nil when no level has turns (no sessions).
func turnsLevel(res *analysis.Result) (*analysis.Level, string) {
	return nearKnee(res, func(l *analysis.Level) bool { return len(l.Turns) > 0 })
}

// nearKnee returns, among the levels of res that has accepts, the one a section about one
// level shows and why: the valid one nearest the knee (on an arrival-rate run, the capacity)
// along the load axis, else the highest steady one, else the highest; nil when has accepts
// none.
func nearKnee(res *analysis.Result, has func(*analysis.Level) bool) (*analysis.Level, string) {
	ax := res.Axis()
	target, what := analysis.NaN(), "knee"
	switch {
	case ax.IsRate() && res.Rate != nil:
		target, what = res.Rate.CapacityRPS, "capacity"
	case !ax.IsRate() && res.Knee != nil:
		target = res.Knee.Concurrency
	}
	var near, steady, top *analysis.Level
	d := math.Inf(1)
	for i := range res.Levels {
		l := &res.Levels[i]
		if !has(l) {
			continue
		}
		x := ax.X(l)
		if target.OK() && l.Valid {
			if e := math.Abs(x - float64(target)); e < d {
				near, d = l, e
			}
		}
		if l.Steady && (steady == nil || x > ax.X(steady)) {
			steady = l
		}
		if top == nil || x > ax.X(top) {
			top = l
		}
	}
	switch {
	case near != nil:
		return near, "the level nearest the " + what
	case steady != nil:
		return steady, "the highest steady level"
	case top != nil:
		return top, "the highest level"
	}
	return nil, ""
}

// turnsTable is the by-turn table of l: turn ("10+" pools the later turns), requests,
// errors, history tokens p50, TTFT p50 and p95 (levels[i].turns of analysis.json).
func turnsTable(l *analysis.Level) table {
	t := table{Header: []string{"turn", "requests", "errors", "history tokens p50", "TTFT p50 (ms)", "TTFT p95 (ms)"}}
	for _, s := range l.Turns {
		t.Rows = append(t.Rows, []string{s.Label(), strconv.Itoa(s.Requests), strconv.Itoa(s.Errors),
			analysis.FormatTokens(s.PromptTokensP50), fnum(s.TTFTP50), fnum(s.TTFTP95)})
	}
	return t
}

// turnsNote says what the by-turn table holds.
func turnsNote(l *analysis.Level, why string) string {
	return fmt.Sprintf("Concurrency %d (%s): the requests sent inside the measurement window by their turn in the conversation "+
		"(%d+: every later turn); errors are failed turns, each of which ended its conversation, and the other columns are the successful ones'. "+
		"History tokens are the turn's prompt: the chat template, every earlier user message and reply, and the turn's own message, "+
		"as the server's usage counted them (else as requested). A turn's TTFT grows with its history unless the server's prefix cache holds it.", l.Concurrency, why, analysis.TurnRows)
}

// consoleTurns writes the by-turn table of the console summary, when the run has sessions.
func consoleTurns(w io.Writer, res *analysis.Result, p func(first, hang, s string)) {
	l, why := turnsLevel(res)
	if l == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "By turn (concurrency %d, %s):\n", l.Concurrency, why)
	fmt.Fprintf(w, "  %4s  %8s  %6s  %10s  %9s  %9s\n", "turn", "requests", "errors", "history", "TTFT p50", "TTFT p95")
	for _, s := range l.Turns {
		fmt.Fprintf(w, "  %4s  %8d  %6d  %10s  %9s  %9s\n", s.Label(), s.Requests, s.Errors,
			analysis.FormatTokens(s.PromptTokensP50), fnum(s.TTFTP50), fnum(s.TTFTP95))
	}
	p("  ", "   ", "(history = prompt tokens p50 of the turn, earlier turns and replies included; TTFT in ms)")
}
