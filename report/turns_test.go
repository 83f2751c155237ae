package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// withTurns is the saturating fixture (knee 32.6) as a 3-turn session run: every level has
// turns; the TTFTs are those TestSessionsPrefixCacheTTFT measured at c = 1 with prefix
// caching (sweep/sessionsim_test.go), offset by the level's concurrency so each level's
// table is told apart; a pooled 10+ row as a longer conversation would give.
func withTurns() *analysis.Result {
	res := analysistest.Saturating()
	for i := range res.Levels {
		c := analysis.Float(res.Levels[i].Concurrency)
		res.Levels[i].Turns = []analysis.TurnStats{
			{Turn: 1, Requests: 6, PromptTokensP50: 440, TTFTP50: 26.3 + c, TTFTP95: 26.8 + c},
			{Turn: 2, Requests: 6, PromptTokensP50: 844, TTFTP50: 24.9 + c, TTFTP95: 26.4 + c},
			{Turn: 3, Requests: 5, Errors: 1, PromptTokensP50: 1248, TTFTP50: 24.2 + c, TTFTP95: 30.0 + c},
			{Turn: 10, AndLater: true, Requests: 2, PromptTokensP50: 4011, TTFTP50: 31.5 + c, TTFTP95: 33.0 + c},
		}
	}
	return res
}

// TestByTurnSection: reports of a session run show the by-turn table of the level nearest
// the knee (32) in Markdown, HTML and the console; a run without sessions shows none.
func TestByTurnSection(t *testing.T) {
	res := withTurns()
	var md, page, con bytes.Buffer
	if err := report.Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report.md", md.String(), "## By turn",
		"| turn | requests | errors | history tokens p50 | TTFT p50 (ms) | TTFT p95 (ms) |",
		"| 3 | 5 | 1 | 1248 | 56.2 | 62.0 |", "| 10+ | 2 | 0 | 4011 |", "Concurrency 32 (the level nearest the knee)")
	if err := report.HTML(&page, res, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report.html", page.String(), `id="turns"`, "By turn", "<td>1248</td>")
	if err := report.Console(&con, res); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "console", con.String(), "By turn (concurrency 32, the level nearest the knee):", "1248", " 10+ ")

	for format, doc := range renderAll(t, analysistest.Saturating()) {
		if strings.Contains(doc, "By turn") {
			t.Errorf("%s: a run without sessions shows a by-turn section", format)
		}
	}
}
