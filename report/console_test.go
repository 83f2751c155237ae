package report_test

// The console summary at a terminal's width: every line of every fixture fits 80 columns, and
// --wide shows every column.

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
)

// TestConsoleFits80: at Width 80 no line of the summary is longer than 80 characters (prose
// wrapped, the default table's columns), for the closed-loop and the arrival-rate fixtures.
func TestConsoleFits80(t *testing.T) {
	fixtures := append(analysistest.Fixtures(), analysistest.RateFixtures()...)
	for _, f := range fixtures {
		res := f.Result()
		if res == nil {
			continue
		}
		var b bytes.Buffer
		if err := report.ConsoleWith(&b, res, report.ConsoleOptions{Width: report.ConsoleWidth}); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > report.ConsoleWidth {
				t.Errorf("%s: a line of %d characters:\n%s", f.Name, n, line)
			}
		}
	}
}

// TestConsoleWide: --wide adds the columns the default leaves out, and the sweep's live rows
// (LevelTable) are the final table's lines.
func TestConsoleWide(t *testing.T) {
	for _, tc := range []struct {
		res          *analysis.Result
		extra        []string
		firstDefault string
	}{
		{analysistest.Saturating(), []string{"±CI", "TTFT p50", "cTTFT p50", "ISL", "OSL"}, "N"},
		{analysistest.Rate(), []string{"ach", "TTFT p50", "ISL", "OSL"}, "req/s"},
	} {
		var narrow, wide bytes.Buffer
		if err := report.Console(&narrow, tc.res); err != nil {
			t.Fatal(err)
		}
		if err := report.ConsoleWith(&wide, tc.res, report.ConsoleOptions{Wide: true}); err != nil {
			t.Fatal(err)
		}
		rate := tc.res.Mode == record.ModeRate
		head := report.NewLevelTable(rate, false, true).Header()
		if f := strings.Fields(head); len(f) == 0 || f[0] != tc.firstDefault {
			t.Errorf("default header %q does not start with %q", head, tc.firstDefault)
		}
		for _, c := range tc.extra {
			if strings.Contains(head, c) || !strings.Contains(wide.String(), c) {
				t.Errorf("column %q: want it in --wide only:\n%s", c, wide.String())
			}
		}
		if !strings.Contains(narrow.String(), head) {
			t.Errorf("the final table's header is not the live one %q:\n%s", head, narrow.String())
		}
	}
}
