package report_test

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestReportsUserCancels: a run with user cancels shows the cancelled share per level and the
// statement on the slots in the console, report.md (a user cancels column) and report.html; the
// same run without them shows none of it.
func TestReportsUserCancels(t *testing.T) {
	res := analysistest.Saturating()
	plain := renderAll(t, res)
	for i := range res.Levels {
		l := &res.Levels[i]
		l.UserCancelled = &analysis.UserCancelled{Count: l.Requests / 5, Share: analysis.Float(float64(l.Requests/5) / float64(l.Requests))}
	}
	freed := true
	res.Cancels = &analysis.CancelResult{UserCancelled: 7, SlotsFreed: &freed,
		Statement: "the server freed the slots of cancelled requests: its running count never exceeded a level's concurrency"}
	got := renderAll(t, res)
	for name, out := range got {
		out = strings.Join(strings.Fields(out), " ") // the console wraps its prose
		if !strings.Contains(out, "the server freed the slots of cancelled requests") || !strings.Contains(out, "Users cancelled 7 of the ") {
			t.Errorf("%s: no statement on the user cancels", name)
		}
		if strings.Contains(plain[name], "cancel") {
			t.Errorf("%s: a run without cancels mentions them", name)
		}
	}
	if !strings.Contains(got["console"], "User cancels (workload.cancel; not errors):") || !strings.Contains(got["console"], "(20.0%) of ") {
		t.Errorf("console: no per-level block of cancels:\n%s", got["console"])
	}
	if !strings.Contains(got["report.md"], "| errors | user cancels |") {
		t.Errorf("report.md: no user cancels column after errors")
	}

	// A level whose users left more than 5% of its TTFT population before a first token
	// shows its TTFT percentiles as lower bounds, in the tables and on the console.
	l := &res.Levels[len(res.Levels)-1]
	if strings.Contains(got["report.md"], "≥ "+l.TTFT.P95.Format()) {
		t.Errorf("report.md marks a TTFT as a lower bound with no level so marked")
	}
	l.UserCancelled.BeforeFirstToken, l.UserCancelled.TTFTLowerBound = l.Requests/5, true
	got = renderAll(t, res)
	for _, name := range []string{"report.md", "console"} {
		if !strings.Contains(got[name], "≥ "+l.TTFT.P95.Format()) {
			t.Errorf("%s: TTFT p95 %s of concurrency %d not shown as a lower bound", name, l.TTFT.P95.Format(), l.Concurrency)
		}
	}
}
