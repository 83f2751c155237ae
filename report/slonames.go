package report

import (
	"slices"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// sloNames describes the SLO of a result, e.g. "TTFT p99 ≤ 2000 ms, ITL p50 ≤ 30.0 ms". It
// lists the SLOs set, only those the levels were checked against when the analysis says
// which (slo.checked): an SLO no level reports is ignored, with a warning, and must not be
// named as holding. One checked at a higher percentile says so: "TTFT p95 ≤ 2000 ms
// (checked at p99)".
func sloNames(slo analysis.SLOResult) string {
	var parts []string
	for _, o := range slo.AllObjectives() {
		checked := o.Name
		if o.CheckedAs != "" {
			checked = o.CheckedAs
		}
		if slo.Checked != nil && !slices.Contains(slo.Checked, checked) || !o.MaxMS.OK() || o.MaxMS <= 0 {
			continue
		}
		t := analysis.ObjectiveLabel(o.Name) + " ≤ " + fnum(o.MaxMS) + " ms"
		if o.CheckedAs != "" {
			_, pct, _ := strings.Cut(o.CheckedAs, "_")
			t += " (checked at " + pct + ")"
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, ", ")
}

// limitName writes the SLO named by slo.limit (ttft_p99) as the reports do, "TTFT p99"; ""
// for no limit or one that is no objective's ("capacity").
func limitName(name string) string {
	if l := analysis.ObjectiveLabel(name); l != name {
		return l
	}
	return ""
}
