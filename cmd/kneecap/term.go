package main

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kneecap/kneecap/internal/live"
	"github.com/kneecap/kneecap/report"
)

// wideUsage is the --wide flag's usage, the same on sweep and analyze.
const wideUsage = "show every column of the level tables (the default columns fit 80)"

// wideFlag defines --wide on fs, setting e.wide.
func wideFlag(fs *flag.FlagSet, e *env) {
	fs.BoolVar(&e.wide, "wide", false, wideUsage)
}

// columns returns the width of the terminal stderr shows: the terminal's own (e.termWidth,
// read again at each call, so a resized window is followed), else $COLUMNS, else 80.
func (e *env) columns() int {
	if e.termWidth != nil {
		if w := e.termWidth(); w > 0 {
			return w
		}
	}
	if n, err := strconv.Atoi(strings.TrimSpace(e.getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	return live.DefaultColumns
}

// terminal is e's stderr as the sweep's live display writes to it.
func (e *env) terminal() live.Terminal {
	return live.Terminal{W: e.stderr, TTY: e.stderrTTY, Width: e.columns, Wide: e.wide}
}

// lineWrapper is stderr on a terminal: a line longer than the terminal is word-wrapped (its
// indent kept, continuation lines indented two more), so messages do not break mid-word at
// the edge. A write holding a carriage return or an escape (the status line) passes as it is.
type lineWrapper struct {
	w     io.Writer
	width func() int
}

// Write implements io.Writer.
func (l lineWrapper) Write(p []byte) (int, error) {
	s := string(p)
	if strings.ContainsAny(s, "\r\x1b") {
		return l.w.Write(p)
	}
	width := l.width()
	var b strings.Builder
	for s != "" {
		line, rest, nl := strings.Cut(s, "\n")
		s = rest
		if !nl || utf8.RuneCountInString(line) <= width {
			b.WriteString(line)
			if nl {
				b.WriteByte('\n')
			}
			continue
		}
		lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
		b.WriteString(report.Wrap(line, width, lead, lead+"  "))
	}
	if _, err := io.WriteString(l.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
