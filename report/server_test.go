package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// sloBeyond is the saturating fixture as analysis leaves it when every valid level meets the
// SLOs: max_concurrency is the largest valid level (64) and limit is empty.
func sloBeyond() *analysis.Result {
	res := analysistest.Saturating()
	res.SLO.MaxConcurrency, res.SLO.TPS, res.SLO.GoodputQPS, res.SLO.Limit = 64, 2667, 20.8, ""
	res.Warnings = append(res.Warnings, "slo: every valid level meets the SLOs: the limit lies beyond concurrency 64")
	return res
}

func TestAnswerSLOBeyond(t *testing.T) {
	var b bytes.Buffer
	if err := report.Console(&b, sloBeyond()); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "console", b.String(),
		"holds at every valid level, so the SLO point is ≥ 64, beyond the measured range; at concurrency 64: 2667 tokens/s and a goodput of 20.8 requests/s.",
		// The plan's replicas "at the SLO point" were computed at the largest level.
		"23 replicas (23 GPUs, $92.00 per hour) at concurrency 64 (the largest level; the SLO point is ≥ 64), 31 at the knee, 40 at the efficient point",
		"$9.58 per 1M output tokens at concurrency 64, $9.52 at the knee, $10.50 at the efficient point")
	mustNotContain(t, "console", b.String(), "up to concurrency 64", "at the SLO point")
}

// TestCompareSLOBeyond: the compare table said "SLO point N: 64, binding SLO: —" for a run
// whose every level met the SLO; "—" means "not computed" in that table.
func TestCompareSLOBeyond(t *testing.T) {
	runs := []*analysis.Result{analysistest.Saturating(), sloBeyond()}
	labels := []string{"binding", "beyond"}
	var md, con, wide bytes.Buffer
	if err := report.Compare(&md, runs, labels, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := report.CompareConsole(&con, runs, labels, nil); err != nil {
		t.Fatal(err)
	}
	if err := report.CompareConsoleWith(&wide, runs, labels, nil, report.CompareConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	// Columns: run, model, knee, knee TPS, efficient point, max TPS @ N, SLO point N, TPS at
	// SLO, binding SLO.
	mustContain(t, "compare.md", md.String(),
		"| binding | meta-llama/Llama-3.1-8B-Instruct | 32.6 (31.8–33.5, batch, plateau onset) | 2683 | 25 (24.3–25.8) | 2667 @ 32 | 45.3 | 2667 | TTFT p95 |",
		"| beyond | meta-llama/Llama-3.1-8B-Instruct | 32.6 (31.8–33.5, batch, plateau onset) | 2683 | 25 (24.3–25.8) | 2667 @ 32 | ≥ 64 | 2667 | none: all valid levels meet it |",
		"“≥ N”: every valid level meets the SLOs")
	if !regexp.MustCompile(`(?m)^beyond .* ≥ 64 +2667 +none: all valid levels meet it `).MatchString(wide.String()) {
		t.Errorf("compare console --wide lacks the ≥ 64 row:\n%s", wide.String())
	}
	// The default columns: run, knee N, knee TPS, max TPS, SLO N, SLO TPS, binds.
	if !regexp.MustCompile(`(?m)^beyond +32.6 +2683 +2667 +≥ 64 +2667 +none `).MatchString(con.String()) {
		t.Errorf("compare console lacks the ≥ 64 row:\n%s", con.String())
	}
}

// The WithServer fixture's values (analysistest): running min(c, 32), waiting c − 32, KV usage
// running ÷ 32, 12 preemptions at 128, no scrape at 2.
var serverRows = []string{
	"| concurrency | mean running (requests) | max running (requests) | mean waiting (requests) | max KV usage | preemptions |",
	"| 1 | 1.00 | 1 | 0.00 | 3.1% | 0 |",
	"| 2 | — | — | — | — | — |",
	"| 16 | 16.0 | 16 | 0.00 | 50.0% | 0 |",
	"| 64 | 32.0 | 32 | 32.0 | 100.0% | 0 |",
	"| 128 | 32.0 | 32 | 96.0 | 100.0% | 12 |",
}

// TestServerMetricsNotExposed: a series the server does not expose (llama-server without its
// KV gauge, SGLang without a preemption counter) reads "—", never 0, in the table and is left
// out of the knee's evidence.
func TestServerMetricsNotExposed(t *testing.T) {
	res := analysistest.WithServer()
	for i := range res.Levels {
		if s := res.Levels[i].Server; s != nil {
			s.MaxKVUsage, s.Preemptions = analysis.NaN(), analysis.NaN()
		}
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, res, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "report.md", b.String(), "| 64 | 32.0 | 32 | 32.0 | — | — |", "| 1 | 1.00 | 1 | 0.00 | — | — |")
	sec := b.String()[strings.Index(b.String(), "## Server metrics"):]
	mustNotContain(t, "report.md server metrics", sec[:strings.Index(sec, "## Warnings")], "0.0%")
}

func TestMarkdownServerMetrics(t *testing.T) {
	var b bytes.Buffer
	if err := report.Markdown(&b, analysistest.WithServer(), nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	mustContain(t, "report.md", md, serverRows...)
	mustContain(t, "report.md", md, "scraped every server\\_metrics.interval and averaged over the level's measurement window")
	// After the validity checks, before the warnings.
	if i, j, k := strings.Index(md, "## Validity checks"), strings.Index(md, "## Server metrics"), strings.Index(md, "## Warnings"); !(0 <= i && i < j && j < k) {
		t.Errorf("section order: validity at %d, server metrics at %d, warnings at %d", i, j, k)
	}
	// No server metrics, no section.
	b.Reset()
	if err := report.Markdown(&b, analysistest.Saturating(), nil); err != nil {
		t.Fatal(err)
	}
	mustNotContain(t, "report.md without server metrics", b.String(), "Server metrics")
}

func TestHTMLServerMetrics(t *testing.T) {
	render := func(res *analysis.Result) string {
		var b bytes.Buffer
		if err := report.HTML(&b, res, nil); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	doc := render(analysistest.WithServer())
	if doc != render(analysistest.WithServer()) {
		t.Error("two renderings of the same result differ")
	}
	i := strings.Index(doc, "<h2>Server metrics</h2>")
	if i < 0 || i < strings.Index(doc, "<h2>Validity checks</h2>") || i > strings.Index(doc, "<h2>Warnings</h2>") {
		t.Fatalf("server metrics section missing or out of place (at %d)", i)
	}
	// The section (heading, table, note) is well-formed XML.
	start := strings.LastIndex(doc[:i], "<section")
	sec := doc[start : i+strings.Index(doc[i:], "</section>")+len("</section>")]
	d := xml.NewDecoder(strings.NewReader(sec))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("server metrics section does not parse as XML: %v\n%s", err, sec)
		}
	}
	mustContain(t, "report.html", sec,
		"<tr><td>64</td><td>32.0</td><td>32</td><td>32.0</td><td>100.0%</td><td>0</td></tr>",
		"<tr><td>128</td><td>32.0</td><td>32</td><td>96.0</td><td>100.0%</td><td>12</td></tr>",
		"<tr><td>2</td><td>—</td><td>—</td><td>—</td><td>—</td><td>—</td></tr>",
		"averaged over the level&#39;s measurement window")
	if strings.Contains(render(analysistest.Saturating()), "Server metrics") {
		t.Error("report.html without server metrics has a server metrics section")
	}
}

// TestSampleRunServerMetrics renders the committed sample run's analysis.json: every level has
// server metrics, so the table has one row per level.
func TestSampleRunServerMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "examples", "sample-run", "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res analysis.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Levels {
		if l.Server == nil {
			t.Fatalf("sample run level %d has no server metrics", l.Concurrency)
		}
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, &res, nil); err != nil {
		t.Fatal(err)
	}
	sec := md.String()[strings.Index(md.String(), "## Server metrics"):]
	// Max running is a count (or "—" in an analysis from before it was kept); the sample run's
	// simulator has an unlimited KV cache, which exposes no usage: "—" (a percentage otherwise).
	rows := regexp.MustCompile(`(?m)^\| (\d+) \| [0-9.]+ \| (—|\d+) \| [0-9.]+ \| (—|[0-9.]+%) \| \d+ \|$`).FindAllStringSubmatch(sec, -1)
	if len(rows) != len(res.Levels) {
		t.Fatalf("server table has %d level rows, want %d:\n%s", len(rows), len(res.Levels), sec)
	}
	for i, r := range rows {
		if want := strconv.Itoa(res.Levels[i].Concurrency); r[1] != want {
			t.Errorf("server table row %d is concurrency %s, want %s", i, r[1], want)
		}
	}
}

// TestLengthsOff: a level whose prompts the server counted more than 5% off the request, or
// whose fixed outputs it did not hold, shows the request beside the mean counted (the level
// table's ISL and OSL, the token-lengths table); a level-summary CSV without lengths has no
// such columns.
func TestLengthsOff(t *testing.T) {
	res := analysistest.Saturating()
	res.Levels[0].InputTokens = analysis.TokenLengths{Requested: 64, Mean: 247.4, P50: 247, P95: 251}
	res.Levels[1].OutputTokens = analysis.TokenLengths{Requested: 128, Mean: 40.2, P50: 31, P95: 110}
	res.Levels[2].OutputTokens = analysis.TokenLengths{Requested: 128, Mean: 40.2, P50: 31, P95: 110}
	res.Levels[2].FixedOutput = false // a cap, not a request
	var con, md bytes.Buffer
	if err := report.ConsoleWith(&con, res, report.ConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	// The default table leaves the lengths to --wide (and the warning).
	var narrow bytes.Buffer
	if err := report.Console(&narrow, res); err != nil {
		t.Fatal(err)
	}
	mustNotContain(t, "default console", narrow.String(), "ISL", "OSL")
	if !regexp.MustCompile(`(?m)^ +1 .* 247≠64 +128 +yes$`).MatchString(con.String()) ||
		!regexp.MustCompile(`(?m)^ +2 .* 512 +40≠128 +yes$`).MatchString(con.String()) ||
		!regexp.MustCompile(`(?m)^ +4 .* 512 +40 +yes$`).MatchString(con.String()) {
		t.Errorf("console level table:\n%s", con.String())
	}
	mustContain(t, "report.md", md.String(),
		"| 772 | 247 ≠ 64 | 128 | yes |",
		"| 1 | 64 | 247 ≠ | 247 | 251 | 128 | 128 | 128 | 128 | yes |",
		"| 2 | 512 | 512 | 512 | 512 | 128 | 40.2 ≠ | 31 | 110 | yes |",
		"| 4 | 512 | 512 | 512 | 512 | 128 | 40.2 | 31 | 110 | no |")
	for i := range res.Levels {
		res.Levels[i].InputTokens, res.Levels[i].OutputTokens = analysis.NoTokenLengths(), analysis.NoTokenLengths()
	}
	con.Reset()
	md.Reset()
	if err := report.ConsoleWith(&con, res, report.ConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	mustNotContain(t, "console without lengths", con.String(), "ISL", "OSL")
	mustNotContain(t, "report.md without lengths", md.String(), "ISL", "## Token lengths")
}
