package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestGridReports: the table of knees fits 80 columns for 12-character names with every value
// at its widest fixture; the Markdown and HTML reports link each scenario's own report, the
// HTML inlines the chart and has no script, and a scenario not run reads as such.
func TestGridReports(t *testing.T) {
	scs := []GridScenario{
		// The widest realistic rows: 12-character names, a 9-character shape, every status.
		{Name: "chat-512-128", Shape: "512/128", Status: "finished", Result: analysistest.Saturating()},
		{Name: "rag-2048-1024", Shape: "2048/1024", Status: "interrupted", Result: analysistest.HugeRange()},
		{Name: "gen-128-1024", Shape: "128/1024", Status: "not run"},
		{Name: "sessions-big", Shape: "sessions/1024", Status: "unreachable: server unreachable: at N=64", Result: analysistest.HugeRange()},
		{Name: "ds-fails-xyz", Shape: "dataset", Status: "failed: sweep: preflight: model not found"},
	}
	var con bytes.Buffer
	if err := GridConsole(&con, "kneecap scenario grid g: runs/grid", scs); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(con.String()), "\n") {
		if n := len([]rune(l)); n > ConsoleWidth {
			t.Errorf("console line of %d columns: %q", n, l)
		}
	}
	c := con.String()
	if !strings.Contains(c, "gen-128-1024  128/1024") || !strings.Contains(c, "not run") || !strings.Contains(c, "rag-2048-10…  2048/1024") ||
		!strings.Contains(c, "sessions…") || !strings.Contains(c, " partial\n") || !strings.Contains(c, " down\n") || !strings.Contains(c, " failed\n") {
		t.Errorf("console:\n%s", con.String())
	}
	var md, page bytes.Buffer
	if err := GridMarkdown(&md, "kneecap scenario grid g", scs, []string{"pareto.png"}); err != nil {
		t.Fatal(err)
	}
	if err := GridHTML(&page, "kneecap scenario grid g", scs, map[string][]byte{"pareto": []byte(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"></svg>`)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(chat-512-128/report.md)", "![pareto](pareto.png)", "not run: no analysis.", "failed: sweep: preflight: model not found"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	h := page.String()
	for _, want := range []string{`<a href="rag-2048-1024/report.html">`, `id="chart-pareto"`, "not run: no analysis."} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(h, "<script") {
		t.Error("report.html has a script")
	}
}
