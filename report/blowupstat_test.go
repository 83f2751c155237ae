package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// TestBlowupBaselineStatistic: a blow-up found on the TTFT p95 (a table without the median)
// names its baseline as p95, not p50 (issue 26: a CSV of p95 columns printed "baseline p50").
func TestBlowupBaselineStatistic(t *testing.T) {
	res := analysistest.Saturating()
	if res.TTFTBlowup == nil || !res.TTFTBlowup.Concurrency.OK() {
		t.Fatal("the fixture has no TTFT blow-up")
	}
	res.TTFTBlowup.Stat = "p95"
	var md bytes.Buffer
	if err := report.Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report.md", md.String(), "baseline p95")
	if strings.Contains(md.String(), "baseline p50") {
		t.Error("report.md names a p50 baseline for a p95 blow-up")
	}
}
