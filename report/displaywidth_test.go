package report

// The console in terminal columns: a wide (CJK) character takes two, in the compare tables'
// columns and where Wrap breaks a line.

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestWrapDisplayWidth: Wrap breaks words of wide characters by the columns they take, so no
// line passes the width (counted in runes, "  吞吐量 吞吐量 吞吐量 吞吐量" fits 20 and takes 29).
func TestWrapDisplayWidth(t *testing.T) {
	t.Parallel()
	const width = 20
	got := Wrap("吞吐量 吞吐量 吞吐量 吞吐量", width, "  ", "    ")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 {
		t.Errorf("Wrap = %q: %d lines, want 2 (two words of 6 columns after the indent a line)", got, len(lines))
	}
	for _, l := range lines {
		if displayWidth(l) > width {
			t.Errorf("Wrap line %q takes %d columns, more than %d", l, displayWidth(l), width)
		}
	}
}

// TestCompareConsoleCJKLabel: a run label of wide characters keeps the compare table's columns
// in place: the second column starts at the same terminal column on the header and every row
// (text/tabwriter, counting runes, pushed the row of "吞吐量测试" five columns right), and no
// line passes ConsoleWidth.
func TestCompareConsoleCJKLabel(t *testing.T) {
	t.Parallel()
	runs := []*analysis.Result{analysistest.Saturating(), analysistest.Saturating()}
	var b bytes.Buffer
	if err := CompareConsole(&b, runs, []string{"h100", "吞吐量测试"}, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 3 {
		t.Fatalf("compare console:\n%s", b.String())
	}
	want := secondColumn(lines[0])
	for _, l := range lines[:3] {
		if got := secondColumn(l); got != want {
			t.Errorf("second column at %d, want %d (the header's):\n%s", got, want, b.String())
		}
	}
	for _, l := range lines {
		if displayWidth(l) > ConsoleWidth {
			t.Errorf("line of %d columns: %s", displayWidth(l), l)
		}
	}
}

// secondColumn is the terminal column where line's second cell starts: after its first cell
// (a run label, without spaces) and the spaces after it.
func secondColumn(line string) int {
	i := strings.IndexByte(line, ' ')
	if i < 0 {
		return -1
	}
	rest := strings.TrimLeft(line[i:], " ")
	return displayWidth(line[:len(line)-len(rest)])
}
