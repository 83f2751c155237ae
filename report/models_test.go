package report_test

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// withModels is the saturating fixture (knee 32.6) as a run that mixes three models, shares
// 0.5, 0.3 and 0.2 of each level's requests, the adapter sql-lora 3× slower (TTFT and TPOT),
// and a model whose name is markup and a terminal escape.
func withModels() *analysis.Result {
	res := analysistest.Saturating()
	for i := range res.Levels {
		l := &res.Levels[i]
		n := l.Requests
		share := func(p float64) (int, analysis.Float) {
			k := int(p * float64(n))
			return k, analysis.Float(float64(k) / float64(n))
		}
		m := func(name string, p, slow float64) analysis.ModelStats {
			k, s := share(p)
			return analysis.ModelStats{Model: name, Requests: k, Share: s,
				TTFTP50: l.TTFT.P50 * analysis.Float(slow), TTFTP95: l.TTFT.P95 * analysis.Float(slow),
				TPOTP50: l.TPOT.P50 * analysis.Float(slow), TPOTP95: l.TPOT.P95 * analysis.Float(slow),
				E2EP95: l.E2E.P95 * analysis.Float(slow), OutputTPS: l.OutputTPS * analysis.Float(p)}
		}
		l.ByModel = []analysis.ModelStats{m("base", 0.5, 1), m("sql-lora", 0.3, 3), m("<b>x</b>\x1b[2J", 0.2, 1)}
	}
	return res
}

// TestByModelSection: reports of a mixed run show the by-model table — every level in
// Markdown and HTML (an excluded one marked), the level nearest the knee (32) on the console
// — with the model names escaped; on an arrival-rate run the console's level is the one
// nearest the capacity; a run without a mix shows none.
func TestByModelSection(t *testing.T) {
	docs := renderAll(t, withModels())
	mustContain(t, "report.md", docs["report.md"], "## By model",
		"| concurrency | model | requests | share | TTFT p50 (ms) | TTFT p95 (ms) | TPOT p50 (ms) | TPOT p95 (ms) | E2E p95 (ms) | output TPS |",
		"| 1 | base |", "| 128 (excluded) | sql-lora |", "&lt;b&gt;x&lt;/b&gt;")
	mustNotContain(t, "report.md", docs["report.md"], "<b>x</b>")
	mustContain(t, "report.html", docs["report.html"], `id="models"`, "By model", "<td>sql-lora</td>")
	mustNotContain(t, "report.html", docs["report.html"], "<b>x</b>")
	mustContain(t, "console", docs["console"], "By model (concurrency 32, the level nearest the knee):", "sql-lora", "29.9%")
	mustNotContain(t, "console", docs["console"], "\x1b")

	rate := analysistest.Rate()
	for i := range rate.Levels {
		rate.Levels[i].ByModel = []analysis.ModelStats{{Model: "base", Requests: 10, Share: 1, TTFTP95: 5}}
	}
	mustContain(t, "console of a rate run", renderAll(t, rate)["console"], "By model (", " requests/s, the level nearest the capacity):")
	for format, doc := range renderAll(t, analysistest.Saturating()) {
		if strings.Contains(doc, "By model") {
			t.Errorf("%s: a run without a mix shows a by-model section", format)
		}
	}
}
