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
		{Name: "chat-512-128", Shape: "512/128", Status: "finished", Result: analysistest.Saturating()},
		{Name: "rag-2048-256", Shape: "2048/256", Status: "interrupted", Result: analysistest.HugeRange()},
		{Name: "gen-128-1024", Shape: "128/1024", Status: "not run"},
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
	if !strings.Contains(con.String(), "gen-128-1024  128/1024") || !strings.Contains(con.String(), "not run") {
		t.Errorf("console:\n%s", con.String())
	}
	var md, page bytes.Buffer
	if err := GridMarkdown(&md, "kneecap scenario grid g", scs, []string{"pareto.png"}); err != nil {
		t.Fatal(err)
	}
	if err := GridHTML(&page, "kneecap scenario grid g", scs, map[string][]byte{"pareto": []byte(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"></svg>`)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(chat-512-128/report.md)", "![pareto](pareto.png)", "not run: no analysis."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	h := page.String()
	for _, want := range []string{`<a href="rag-2048-256/report.html">`, `id="chart-pareto"`, "not run: no analysis."} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(h, "<script") {
		t.Error("report.html has a script")
	}
}
