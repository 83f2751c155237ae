package report_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// TestHTMLNarrowCharts: a chart with a narrow rendering is inlined twice in its figure, the
// default in div.wide and the narrow in div.narrow, which the page's media query shows on a
// phone; a chart without one is inlined alone; a narrow rendering without its chart is left
// out; a narrow rendering is checked as every inlined SVG is.
func TestHTMLNarrowCharts(t *testing.T) {
	t.Parallel()
	svg := func(s string) []byte {
		return []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>` + s + `</text></svg>`)
	}
	svgs := map[string][]byte{"throughput": svg("wide tps"), "throughput" + report.NarrowSuffix: svg("narrow tps"),
		"ttft": svg("wide ttft"), "qps" + report.NarrowSuffix: svg("orphan")}
	var b bytes.Buffer
	if err := report.HTML(&b, analysistest.Saturating(), svgs); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	mustContain(t, "report.html", doc,
		`<figure id="chart-throughput"><div class="wide"><svg xmlns="http://www.w3.org/2000/svg"><text>wide tps</text></svg></div><div class="narrow"><svg xmlns="http://www.w3.org/2000/svg"><text>narrow tps</text></svg></div></figure>`,
		`<figure id="chart-ttft"><svg xmlns="http://www.w3.org/2000/svg"><text>wide ttft</text></svg></figure>`,
		`@media (max-width:37.5rem){figure .wide{display:none}figure .narrow{display:block;`)
	if strings.Contains(doc, "orphan") || strings.Contains(doc, "chart-qps") {
		t.Error("a narrow rendering without its chart is inlined")
	}
	if n := strings.Count(doc, "<figure"); n != 2 {
		t.Errorf("%d figures, want 2", n)
	}
	svgs["throughput"+report.NarrowSuffix] = []byte(`<svg><script>alert(1)</script></svg>`)
	if err := report.HTML(io.Discard, analysistest.Saturating(), svgs); err == nil || !strings.Contains(err.Error(), "chart throughput, narrow") {
		t.Errorf("a narrow rendering with a script: error %v, want one naming it", err)
	}
}
