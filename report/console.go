package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// ConsoleWidth is the terminal width the level table's default columns fit.
const ConsoleWidth = 80

// ConsoleOptions lay out the console summary.
type ConsoleOptions struct {
	// Width is the number of columns the prose is wrapped to (a terminal's width); 0 leaves
	// every sentence on one line (a file, a pipe).
	Width int
	// Wide shows every column of the level table (ISL and OSL, ±CI, TTFT p50, the achieved
	// rate, …); by default it shows the columns that fit ConsoleWidth.
	Wide bool
}

// Console writes the summary printed at the end of sweep and analyze with the default
// options (ConsoleWith).
func Console(w io.Writer, res *analysis.Result) error {
	return ConsoleWith(w, res, ConsoleOptions{})
}

// ConsoleWith writes the console summary: the headline first, one line an answer
// (answerLines), then the method text, one sentence a paragraph, then the level table
// (LevelTable), then the warnings numbered; prose wrapped to o.Width.
func ConsoleWith(w io.Writer, res *analysis.Result, o ConsoleOptions) error {
	if res == nil {
		return fmt.Errorf("report: console: nil result")
	}
	bw := bufio.NewWriter(w)
	p := func(first, hang, s string) { fmt.Fprint(bw, Wrap(s, o.Width, first, hang)) }
	head := "kneecap"
	if res.Meta.Name != "" {
		head += " · " + res.Meta.Name
	}
	if s := subtitle(res.Meta); s != "" {
		head += " · " + s
	}
	p("", "  ", head)
	fmt.Fprintln(bw)
	consoleHeadline(res, p)
	fmt.Fprintln(bw)
	for _, s := range Answer(res) {
		p("  ", "    ", s)
	}
	fmt.Fprintln(bw)
	if len(res.Levels) > 0 {
		consoleLevels(bw, res, o, p)
		consoleTurns(bw, res, p)
		consoleModels(bw, res, o.Width, p)
	} else {
		fmt.Fprintln(bw, "  no levels measured")
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "Warnings:")
		for i, s := range res.Warnings {
			n := fmt.Sprintf("  %d. ", i+1)
			p(n, strings.Repeat(" ", len(n)), s)
		}
	}
	return flush(bw, "console")
}

// consoleHeadline writes the headline through p, one answer a line, its label in a column.
func consoleHeadline(res *analysis.Result, p func(first, hang, s string)) {
	lines := answerLines(res)
	w := 0
	for _, l := range lines {
		w = max(w, displayWidth(l.Label))
	}
	for _, l := range lines {
		label := l.Label + strings.Repeat(" ", w-displayWidth(l.Label))
		p("  "+label+"  ", strings.Repeat(" ", w+4), l.text())
	}
}

// consoleLevels writes the level table, the notes on its columns and the errors by class.
func consoleLevels(w io.Writer, res *analysis.Result, o ConsoleOptions, p func(first, hang, s string)) {
	levels := sortedLevels(res)
	t := consoleTable(res, levels, o)
	fmt.Fprint(w, t.Header())
	for i := range levels {
		fmt.Fprint(w, t.Row(&levels[i]))
	}
	p("  ", "   ", consoleNote(res, o.Wide))
	if s := clockNote(res); s != "" {
		p("  ", "   ", s+".")
	}
	if s := clientEffectNote(res); s != "" {
		p("  ", "   ", s+".")
	}
	if o.Wide && hasLengths(res) {
		p("  ", "   ", "(ISL, OSL = mean prompt and output tokens per request as the server counted them; ≠N: more than 5% off the N requested)")
	}
	first := true
	for _, l := range levels {
		if len(l.ErrorClasses) == 0 {
			continue
		}
		if first {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "Errors by class:")
			first = false
		}
		if l.IsRate() {
			p("  ", "    ", fmt.Sprintf("%s requests/s: %s", frate(l.OfferedRPS), errorClasses(l.ErrorClasses)))
		} else {
			p("  ", "    ", fmt.Sprintf("concurrency %d: %s", l.Concurrency, errorClasses(l.ErrorClasses)))
		}
	}
	consoleCancels(w, res, p)
}

// consoleNote explains the level table's columns.
func consoleNote(res *analysis.Result, wide bool) string {
	var s string
	switch {
	case whole(res):
		s = "(" + wholeConsoleNote
	case res.Mode.IsRate() && wide:
		s = "(req/s = offered, ach = sent, done = completed, requests/s; sust = sustainable (backlog growth, req/s); tok/s = output tokens/s; err = errors (rate); latencies in ms, TTFT and E2E from the scheduled arrival; lag = schedule lag"
	case res.Mode.IsRate():
		s = "(req/s = offered, done = completed, requests/s; sust = sustainable; err = error rate; tok/s = output tokens/s; latencies in ms, TTFT and E2E from the scheduled arrival; lag = schedule lag"
	case wide:
		s = "(tok/s = output tokens/s ±95% CI; err = errors (rate); QPS = requests/s; latencies in ms; cTTFT = TTFT on the client's clock"
	default:
		s = "(tok/s = output tokens/s; err = error rate; QPS = requests/s; latencies in ms"
	}
	if consoleHit(res, wide) {
		s += "; hit = prefix-cache hit rate"
	}
	if wide {
		s += "; read lag = kernel receive → client timestamp, ms (- without timestamps)"
	}
	if consoleEnergy(res, wide) {
		s += "; J/tok = the GPUs' energy per " + throughputWord(res) + " token, GPU W = their mean total power"
	}
	s += "; ✗ = excluded from fits"
	if res.Trace != nil {
		s += "; 2× = the trace's time scale (its arrivals twice as fast)"
	}
	for _, l := range res.Levels {
		if l.Refine != "" {
			s += "; + = added after the planned levels"
			break
		}
	}
	if !wide {
		s += "; --wide for every column"
	}
	return s + ")"
}

// Wrap breaks s at spaces into lines of at most width terminal columns (displayWidth: a wide
// character counts two), the first starting with first and the others with hang, each ending
// in a newline; width ≤ 0 keeps one line. A word longer than a line stays whole on its own
// line.
func Wrap(s string, width int, first, hang string) string {
	var b strings.Builder
	line, n := first, displayWidth(first)
	empty := true
	for _, word := range strings.Fields(s) {
		wn := displayWidth(word)
		if !empty && width > 0 && n+1+wn > width {
			b.WriteString(line + "\n")
			line, n, empty = hang, displayWidth(hang), true
		}
		if !empty {
			line += " "
			n++
		}
		line += word
		n += wn
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
