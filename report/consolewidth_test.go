package report

// The console's level table at every terminal width: whole columns on continuation lines,
// every cell whole under its header, no line past the terminal.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestLevelTableWidths: for every fixture, default and --wide, at widths from 200 down to 20
// columns (tableWidths), no line of the level table is longer than the terminal; every column's header is
// whole on one of the header's lines, and each row has as many lines as the header, with every
// cell whole and right-aligned under its column's header (a column moves to a continuation
// line whole, never cut and never left out); a wider terminal needs no more lines.
func TestLevelTableWidths(t *testing.T) {
	t.Parallel()
	fixtures := append(analysistest.Fixtures(), analysistest.RateFixtures()...)
	for _, f := range fixtures {
		res := f.Result()
		if res == nil || len(res.Levels) == 0 {
			continue
		}
		levels := sortedLevels(res)
		for _, wide := range []bool{false, true} {
			lines, at200 := 0, 0
			for _, width := range tableWidths(res, levels, wide) {
				name := fmt.Sprintf("%s, wide %v, width %d", f.Name, wide, width)
				tab := consoleTable(res, levels, ConsoleOptions{Width: width, Wide: wide})
				head := checkTableLines(t, name, tab.Header(), width)
				ends := headerEnds(t, name, tab, head)
				for i := range levels {
					row := checkTableLines(t, name, tab.Row(&levels[i]), width)
					if len(row) != len(head) {
						t.Fatalf("%s: a row of %d lines under a header of %d:\n%s\n%s", name, len(row), len(head),
							strings.Join(head, "\n"), strings.Join(row, "\n"))
					}
					for j, c := range tab.cols {
						cell, at := []rune(c.cell(&levels[i])), ends[j]
						r := []rune(row[at.line])
						lo := at.end - len(cell)
						if lo < 1 || at.end > len(r) || string(r[lo:at.end]) != string(cell) || r[lo-1] != ' ' {
							t.Errorf("%s: column %q: cell %q is not whole under its header:\n%s\n%s", name, c.head, string(cell),
								strings.Join(head, "\n"), strings.Join(row, "\n"))
						}
					}
				}
				if len(head) < lines {
					t.Errorf("%s: %d header lines, %d one column wider", name, len(head), lines)
				}
				if width == 200 {
					at200 = len(head)
				}
				lines = len(head)
			}
			if at200 != 1 {
				t.Errorf("%s, wide %v: %d header lines at 200 columns, want 1", f.Name, wide, at200)
			}
		}
	}
}

// tableWidths are the terminal widths the test lays res's table out in, widest first: 200,
// 120, 100, 80, 60, 40, 30, 20, and those around the table's one-line width and its half, where the
// breaks move.
func tableWidths(res *analysis.Result, levels []analysis.Level, wide bool) []int {
	n := utf8.RuneCountInString(strings.TrimSuffix(consoleTable(res, levels, ConsoleOptions{Wide: wide}).Header(), "\n"))
	ws := []int{200, 120, 100, 80, 60, 40, 30, 20, n + 1, n, n - 1, n / 2, n/2 - 1}
	slices.Sort(ws)
	slices.Reverse(ws)
	ws = slices.Compact(ws)
	return slices.DeleteFunc(ws, func(w int) bool { return w < 20 || w > 200 })
}

// checkTableLines splits a table line (with its newline) into its terminal lines, each no
// longer than width.
func checkTableLines(t *testing.T, name, s string, width int) []string {
	t.Helper()
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("%s: %q does not end in a newline", name, s)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for _, l := range lines {
		if n := displayWidth(l); n > width {
			t.Errorf("%s: a line of %d columns: %q", name, n, l)
		}
	}
	return lines
}

// columnEnd is where a column's header ends: its line and the column after its last character.
type columnEnd struct{ line, end int }

// headerEnds finds each column's header, in order, whole on the header's lines, each after a
// space.
func headerEnds(t *testing.T, name string, tab LevelTable, head []string) []columnEnd {
	t.Helper()
	var ends []columnEnd
	line, from := 0, 0
	for _, c := range tab.cols {
		for {
			if line >= len(head) {
				t.Fatalf("%s: header %q is not whole on any line:\n%s", name, c.head, strings.Join(head, "\n"))
			}
			r := []rune(head[line])
			if i := strings.Index(string(r[min(from, len(r)):]), " "+c.head); i >= 0 {
				at := from + utf8.RuneCountInString(string(r[from:])[:i]) + 1 + utf8.RuneCountInString(c.head)
				ends = append(ends, columnEnd{line, at})
				from = at
				break
			}
			line, from = line+1, 0
		}
	}
	return ends
}

// TestColumnLinesBreakWhole: a line breaks between whole columns only, where the columns'
// widths (or a longer cell's) put it, continuation lines indented past the first column, or
// by two spaces where a column would not fit after that; a cell longer than its column stays
// whole; widths are terminal columns, a wide character two; width 0 keeps one line.
func TestColumnLinesBreakWhole(t *testing.T) {
	t.Parallel()
	widths := []int{4, 6, 6, 6}
	cells := []string{"1", "123.4", "12345678", "yes"}
	sp := strings.Repeat
	for _, c := range []struct {
		width int
		want  string
	}{
		{0, "     1   123.4  12345678     yes\n"},
		// The nominal line (the widths) is 30; the longer cell makes it 32, so 30 breaks.
		{32, "     1   123.4  12345678     yes\n"},
		{30, "     1   123.4  12345678\n" + sp(" ", 11) + "yes\n"},
		{29, "     1   123.4  12345678\n" + sp(" ", 11) + "yes\n"},
		{16, "     1   123.4\n" + sp(" ", 8) + "12345678\n" + sp(" ", 11) + "yes\n"},
		// 12345678 does not fit after the 6-column indent: it goes after two spaces.
		{14, "     1   123.4\n" + sp(" ", 2) + "12345678\n" + sp(" ", 11) + "yes\n"},
		{5, "     1\n" + sp(" ", 3) + "123.4\n" + sp(" ", 2) + "12345678\n" + sp(" ", 5) + "yes\n"},
	} {
		if got := columnLines(cells, widths, 0, c.width); got != c.want {
			t.Errorf("width %d:\n%s\nwant\n%s", c.width, got, c.want)
		}
	}
	if got, want := columnLines([]string{"m", "12"}, []int{3, 4}, 1, 0), "  m      12\n"; got != want {
		t.Errorf("left-aligned first column: %q, want %q", got, want)
	}
	// 模型 is four columns wide: it fills its column; 模型名称 (eight) passes it and breaks the line.
	if got, want := columnLines([]string{"模型", "1.5"}, []int{4, 6}, 1, 14), "  模型     1.5\n"; got != want {
		t.Errorf("wide characters: %q, want %q", got, want)
	}
	if got, want := columnLines([]string{"模型名称", "1.5"}, []int{4, 6}, 1, 14), "  模型名称\n"+sp(" ", 11)+"1.5\n"; got != want {
		t.Errorf("a wide cell past its column: %q, want %q", got, want)
	}
}

// TestConsoleModelsWidths: the console's by-model table keeps within the terminal from 80
// columns down to 20 with a model name of twenty wide characters (forty columns), clipped by
// its width in columns with "…".
func TestConsoleModelsWidths(t *testing.T) {
	t.Parallel()
	res := analysistest.Saturating()
	long := strings.Repeat("模", 20)
	for i := range res.Levels {
		res.Levels[i].ByModel = []analysis.ModelStats{{Model: long, Requests: 10, Share: 1, TTFTP50: 12.5, OutputTPS: 1234}}
	}
	for _, width := range []int{80, 60, 40, 30, 24, 20} {
		var b strings.Builder
		consoleModels(&b, res, width, func(first, hang, s string) {})
		checkTableLines(t, fmt.Sprintf("by model, width %d", width), strings.TrimPrefix(b.String(), "\n"), width)
		if clipped := strings.Repeat("模", (modelColumn(width)-1)/2) + "…"; !strings.Contains(b.String(), clipped) {
			t.Errorf("width %d: no %q in\n%s", width, clipped, b.String())
		}
	}
}
