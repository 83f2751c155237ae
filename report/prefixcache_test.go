package report_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// TestPrefixCacheColumn: with a hit rate on some level, report.md, report.html and the console put it
// beside TTFT ("—" on a level without one) and the console stays within 80 columns; without
// any, neither shows the column.
func TestPrefixCacheColumn(t *testing.T) {
	res := analysistest.Saturating()
	for i := range res.Levels[1:] {
		res.Levels[i+1].PrefixCache = &analysis.PrefixCache{HitRate: 0.5, Source: analysis.PrefixFromCounters, UsageHitRate: 0.5}
	}
	var md, con bytes.Buffer
	if err := report.Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	if err := report.ConsoleWith(&con, res, report.ConsoleOptions{Width: report.ConsoleWidth}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| TTFT p99 (ms) | prefix-cache hit |") || !strings.Contains(md.String(), " | 50.0% | ") || !strings.Contains(md.String(), " | — | ") {
		t.Errorf("report.md level table without the hit rate:\n%s", md.String())
	}
	var page bytes.Buffer
	if err := report.HTML(&page, res, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<th>prefix-cache hit</th>") || !strings.Contains(page.String(), "50.0%") {
		t.Errorf("report.html level table without the hit rate")
	}
	head := ""
	for _, line := range strings.Split(con.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > report.ConsoleWidth {
			t.Errorf("a console line of %d characters:\n%s", n, line)
		}
		if strings.Contains(line, "TTFT p95") && strings.Contains(line, "valid") {
			head = line
		}
	}
	if !strings.Contains(head, "TTFT p95    hit") || !strings.Contains(con.String(), "50.0%") || !strings.Contains(con.String(), "hit = prefix-cache hit rate") {
		t.Errorf("console without the hit rate:\n%s", con.String())
	}
	md.Reset()
	if err := report.Markdown(&md, analysistest.Saturating(), nil); err != nil || strings.Contains(md.String(), "prefix-cache") {
		t.Errorf("a run without hit rates shows the column (%v)", err)
	}
}
