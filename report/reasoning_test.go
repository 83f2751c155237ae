package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// TestReasoningTTFA: when requests reasoned first, every report says TTFT includes the
// reasoning and shows TTFA beside it (a sentence, level-table columns, a method row); a run
// without reasoning shows no TTFA at all.
func TestReasoningTTFA(t *testing.T) {
	plain := analysistest.Saturating()
	res := analysistest.Saturating()
	for i := range res.Levels {
		l := &res.Levels[i]
		l.TTFA = analysis.Latency{Mean: l.TTFT.Mean + 500, P50: l.TTFT.P50 + 500, P90: l.TTFT.P90 + 500, P95: l.TTFT.P95 + 500, P99: l.TTFT.P99 + 500}
		l.MeanReasoningTokens = 120
	}
	first, last := res.Levels[0], res.Levels[len(res.Levels)-1]
	sentence := "Requests reasoned before they answered: TTFT here is the time to the first token, reasoning included; the time to the first answer token (TTFA) p50 is " +
		first.TTFA.P50.Format() + " ms at concurrency 1 to " + last.TTFA.P50.Format() + " ms at 128, after 120 reasoning tokens on average."

	var md, plainMD, html, console bytes.Buffer
	if err := report.Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&plainMD, plain, nil); err != nil {
		t.Fatal(err)
	}
	if err := report.HTML(&html, res, nil); err != nil {
		t.Fatal(err)
	}
	if err := report.Console(&console, res); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report.md", md.String(), "| TTFT p99 (ms) | TTFA p50 (ms) | TTFA p95 (ms) | TPOT p50 (ms) |",
		"| TTFA | t(first chunk with non-empty answer content, not reasoning) − t\\_send",
		sentence)
	mustContain(t, "report.html", html.String(), "TTFA p50 (ms)", "time to the first answer token (TTFA)")
	mustContain(t, "console", console.String(), sentence)
	if strings.Contains(plainMD.String(), "TTFA") {
		t.Error("report.md of a run without reasoning mentions TTFA")
	}
}
