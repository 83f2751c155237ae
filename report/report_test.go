package report_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/report"
)

func mustContain(t *testing.T, what, doc string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(doc, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

// answerNumbers are the numbers of the saturating fixture every report must state.
var answerNumbers = []string{
	"2667 tokens/s at concurrency 32",      // max TPS
	"knee is at concurrency 32.6",          // knee
	"31.8–33.5",                            // its interval
	"batch fit",                            // its method
	"other estimates: hinge breakpoint 30", // the other estimates, each named
	"Kneedle 16",                           // for what it measures
	"the onset of the throughput plateau, the batch model's slot limit S", // what it is
	"Rule (plateau onset): the batch model fits best",                     // its rule
	"efficient point is concurrency 25 (2439 tokens/s), 95% interval 24.3–25.8, on the batch fit: past it, one more doubling of concurrency adds less than 10% throughput",
	"past concurrency 33.1",  // TTFT blow-up
	"up to concurrency 45.3", // SLO point
	"20.8 requests/s",        // goodput there
	"TTFT p95 binds first",   // binding SLO
	"23 replicas (23 GPUs, $92.00 per hour) at the SLO point, 31 at the knee, 40 at the efficient point", // plan
	"$9.58 per 1M output tokens at the SLO point, $9.52 at the knee, $10.50 at the efficient point",
}

// TestAnswerKneeRules: the knee sentence says what the knee is by its rule. Under the
// marginal-gain rule the knee is the efficient point, and no second sentence repeats it; an
// analysis.json written before knee.rule existed reads as the marginal-gain knee it was,
// with no rule sentence.
func TestAnswerKneeRules(t *testing.T) {
	res := analysistest.Saturating()
	e := res.EfficientPoint
	res.Knee.Concurrency, res.Knee.TPS, res.Knee.Interval, res.Knee.Method = e.Concurrency, e.TPS, e.Interval, analysis.MethodUSL
	res.Knee.Rule, res.Knee.RuleReason = analysis.RuleMarginalGain, "the USL fits best (R² 0.9990; batch 0.9950, hinge 0.9800): a smooth curve"
	res.Capacity.ReplicasAtKnee = res.Capacity.ReplicasAtEfficientPoint
	answer := strings.Join(report.Answer(res), " ")
	mustContain(t, "marginal-gain answer", answer,
		"knee is at concurrency 25 (2439 tokens/s), 95% interval 24.3–25.8, from the USL fit (other estimates: batch-model slot limit 32.6, hinge breakpoint 30.0, Kneedle 16.0): past it, one more doubling of concurrency adds less than 10% throughput.",
		"Rule (marginal gain): the USL fits best (R² 0.9990; batch 0.9950, hinge 0.9800): a smooth curve.",
		"at the SLO point, 40 at the knee;")
	mustNotContain(t, "marginal-gain answer", answer, "efficient point")
	res.Knee.Rule, res.Knee.RuleReason, res.EfficientPoint = "", "", nil
	answer = strings.Join(report.Answer(res), " ")
	mustContain(t, "answer without a rule", answer, "past it, one more doubling of concurrency adds less than the knee gain in throughput.")
	mustNotContain(t, "answer without a rule", answer, "Rule (", "efficient point")
}

func TestConsole(t *testing.T) {
	res := analysistest.Saturating()
	var b bytes.Buffer
	if err := report.Console(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	mustContain(t, "console", out, answerNumbers...)
	mustContain(t, "console", out, res.Warnings...)
	mustContain(t, "console", out, "1. "+res.Warnings[0], "2. "+res.Warnings[1])
	// The answer comes before the table, the table before the warnings.
	if i, j, k := strings.Index(out, "Maximum output"), strings.Index(out, "TTFT p95  TPOT p95"), strings.Index(out, "Warnings:"); !(i < j && j < k) {
		t.Errorf("console order: answer at %d, table at %d, warnings at %d", i, j, k)
	}
	// One table row per level.
	rows := regexp.MustCompile(`(?m)^\s+(1|2|4|8|16|32|64|128)\s+\d+\s`).FindAllString(out, -1)
	if len(rows) != 8 {
		t.Errorf("console table has %d level rows, want 8:\n%s", len(rows), out)
	}
	if err := report.Console(io.Discard, nil); err == nil {
		t.Error("nil result: want an error")
	}
	if strings.Contains(out, "Errors by class") {
		t.Errorf("console lists error classes for a run without errors:\n%s", out)
	}
	// A run with errors lists them by class per level.
	b.Reset()
	if err := report.Console(&b, analysistest.ErrorsHeavy()); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "console", b.String(), "Errors by class:", "http_429", "stream_broken 2")
}

func TestMarkdown(t *testing.T) {
	res := analysistest.Saturating()
	var b bytes.Buffer
	charts := []string{"throughput.png", "ttft.png", "latency_vs_throughput.png"}
	if err := report.Markdown(&b, res, charts); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	mustContain(t, "report.md", md, answerNumbers...)
	mustContain(t, "report.md", md,
		"![throughput](throughput.png)", "![latency vs throughput](latency_vs_throughput.png)",
		"| concurrency | requests | errors | output TPS (tokens/s) |",
		"TTFT p95 (ms)",
		"(E2E − TTFT) ÷ (N\\_out − 1)",           // TPOT formula
		"X(N) = λN ÷ (1 + σ(N − 1) + κN(N − 1))", // USL
		"L = λ·W",                           // Little's law
		"E2E ≈ TTFT + TPOT × (N\\_out − 1)", // identities
		"QPS ≈ concurrency ÷ mean E2E", "output TPS ≈ QPS × mean N\\_out",
		"not steady: slice TPS trend p = 0.01", // level note
		"σ = 0.045, κ = 0.0004",                // fit
		"slot limit S = 32",                    // the batch fit's parameters,
		"β = 0.25 ms per running sequence",     // in the unit of a decode step
		"m = min(N, S): S decode slots",        // and its method row
	)
	// Warnings are footnotes, referenced from the answer paragraph.
	for i, w := range res.Warnings {
		ref := "[^" + string(rune('1'+i)) + "]"
		mustContain(t, "report.md", md, ref+": "+w, " "+ref)
	}
	// The answer paragraph comes first, right after the title lines.
	if i, j := strings.Index(md, "Maximum output throughput"), strings.Index(md, "## "); i < 0 || i > j {
		t.Errorf("answer paragraph at %d, first section at %d: want the answer first", i, j)
	}
	// The invalid level 128 is marked.
	if !regexp.MustCompile(`\| 128 \| .* \| no ✗ \|`).MatchString(md) {
		t.Error("level 128 is not marked invalid in the level table")
	}
}

// TestIdentities checks the measured errors of the identities on a level built so the
// arithmetic is exact: TTFT 100 ms, TPOT 10 ms, N_out 101, E2E 1210 ms, achieved concurrency
// 11, QPS 10, output TPS 1000 →
// E2E vs TTFT + TPOT × 100 = 1100: |1210 − 1100| ÷ 1210 = 9.1%;
// QPS vs 11 ÷ 1.21 s = 9.09: |10 − 9.09| ÷ 10 = 9.1%;
// TPS vs 10 × 101 = 1010: |1000 − 1010| ÷ 1000 = 1.0%;
// Little's law error 0.5 → 50.0% ✗; achieved 11 of target 12 = 91.7% ✗.
func TestIdentities(t *testing.T) {
	res := analysistest.Base(nil)
	l := analysistest.Level(12)
	l.TTFT.Mean, l.TPOT.Mean, l.E2E.Mean, l.MeanOutputTokens = 100, 10, 1210, 101
	l.AchievedConcurrency, l.QPS, l.OutputTPS, l.LittlesLawError = 11, 10, 1000, 0.5
	l.ClientBound, l.Valid = true, false
	res.Levels = []analysis.Level{l}
	var b bytes.Buffer
	if err := report.Markdown(&b, res, nil); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "validity table", b.String(),
		"| 12 | 11.0 (91.7%) ✗ | 50.0% ✗ | yes | yes ✗ | 9.1% | 9.1% | 1.0% |")
}

// checkHTML parses every inline <svg> element as XML and rejects external references.
func checkHTML(t *testing.T, doc string, wantSVGs int) {
	t.Helper()
	n := 0
	for rest := doc; ; {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			t.Fatal("unterminated <svg>")
		}
		frag := rest[i : i+j+len("</svg>")]
		d := xml.NewDecoder(strings.NewReader(frag))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("inline svg %d does not parse as XML: %v", n, err)
			}
		}
		n++
		rest = rest[i+j:]
	}
	if n != wantSVGs {
		t.Errorf("html has %d inline svgs, want %d", n, wantSVGs)
	}
	for _, m := range regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?([^"' >]*)`).FindAllStringSubmatch(doc, -1) {
		if !strings.HasPrefix(m[2], "#") {
			t.Errorf("html references %s=%q: want no external assets", m[1], m[2])
		}
	}
	for _, bad := range []string{"<script", "<link", "@import", "url("} {
		if strings.Contains(strings.ToLower(doc), bad) {
			t.Errorf("html contains %q", bad)
		}
	}
}

func TestHTML(t *testing.T) {
	res := analysistest.Saturating()
	res.Warnings = append(res.Warnings, `model name has <script>alert("x")</script> in it`)
	svgs := map[string][]byte{}
	for _, name := range []string{"throughput", "ttft", "tpot", "latency_vs_throughput", "qps", "dashboard"} {
		c, err := plots.Build(name, res)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plots.Render(c, 4*72, 2.6*72, "svg")
		if err != nil {
			t.Fatal(err)
		}
		svgs[name] = b
	}
	var b bytes.Buffer
	if err := report.HTML(&b, res, svgs); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	checkHTML(t, doc, 5) // the dashboard is left out: it repeats four of the charts
	mustContain(t, "report.html", html.UnescapeString(doc), "2667 tokens/s at concurrency 32", "knee is at concurrency 32.6", "31.8–33.5",
		"(E2E − TTFT) ÷ (N_out − 1)", "X(N) = λN ÷ (1 + σ(N − 1) + κN(N − 1))", res.Warnings[0],
		"model name has <script>alert(\"x\")</script> in it")
	mustContain(t, "report.html", doc, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`)
	if err := report.HTML(io.Discard, res, map[string][]byte{"x": []byte(`<svg><script>alert(1)</script></svg>`)}); err == nil {
		t.Error("svg with a script: want an error")
	}
}

// TestEveryFixture renders every report for every hand-made result without error, and the
// console and Markdown carry every warning.
func TestEveryFixture(t *testing.T) {
	for _, f := range analysistest.Fixtures() {
		res := f.Result()
		if res == nil {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			var c, m, h bytes.Buffer
			if err := report.Console(&c, res); err != nil {
				t.Fatal(err)
			}
			if err := report.Markdown(&m, res, nil); err != nil {
				t.Fatal(err)
			}
			if err := report.HTML(&h, res, nil); err != nil {
				t.Fatal(err)
			}
			checkHTML(t, h.String(), 0)
			for _, w := range res.Warnings {
				mustContain(t, "console", c.String(), w)
				mustContain(t, "html", h.String(), w)
			}
			if strings.Contains(c.String()+m.String(), "NaN") {
				t.Error("a null value printed as NaN, want —")
			}
		})
	}
}
