package report_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// headline returns the console headline of res: label → the rest of its line (the lines
// between the title and the first blank line), and the labels in order.
func headline(t *testing.T, res *analysis.Result) (map[string]string, []string) {
	t.Helper()
	var b bytes.Buffer
	if err := report.Console(&b, res); err != nil {
		t.Fatal(err)
	}
	blocks := strings.SplitN(b.String(), "\n\n", 3)
	if len(blocks) < 3 {
		t.Fatalf("console has no headline block:\n%s", b.String())
	}
	lines, order := map[string]string{}, []string{}
	for _, l := range strings.Split(blocks[1], "\n") {
		label, rest, ok := strings.Cut(strings.TrimSpace(l), "  ")
		if !ok {
			t.Fatalf("headline line %q has no label column", l)
		}
		lines[label] = strings.TrimSpace(rest)
		order = append(order, label)
	}
	return lines, order
}

// number matches a figure of the headline: 2667, 32.6, 19.9.
var number = regexp.MustCompile(`\d+(\.\d+)?`)

// TestHeadlineOneLinePerAnswer: the console, report.md and report.html open with one line
// per answer — on the saturating fixture max TPS, knee, efficient point (a plateau-onset
// knee), SLO point, TTFT blow-up and replicas; on the rate fixture capacity, max TPS, SLO point,
// TTFT blow-up and replicas — each with its number, and the 95% interval of those the analysis
// gives one (max TPS from its level's CI, the knee, the efficient point, the capacity); the
// same lines in all three formats, before the method text.
func TestHeadlineOneLinePerAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res       *analysis.Result
		labels    []string
		intervals []string
	}{
		{analysistest.Saturating(), []string{"Max throughput", "Knee", "Efficient point", "SLO point", "TTFT blow-up", "Replicas"},
			[]string{"Max throughput", "Knee", "Efficient point"}},
		{analysistest.Rate(), []string{"Capacity", "Max throughput", "SLO point", "TTFT blow-up", "Replicas"},
			[]string{"Capacity", "Max throughput"}},
	} {
		lines, order := headline(t, tc.res)
		if strings.Join(order, "|") != strings.Join(tc.labels, "|") {
			t.Errorf("%s: headline %q, want %q", tc.res.Meta.Name, order, tc.labels)
		}
		for label, text := range lines {
			if !number.MatchString(text) || strings.Contains(text, "next:") {
				t.Errorf("%s: %s: %q, want a number and no next step", tc.res.Meta.Name, label, text)
			}
			if n := len(strings.Fields(text)); n > 20 {
				t.Errorf("%s: %s: %d words, want a short line: %q", tc.res.Meta.Name, label, n, text)
			}
		}
		for _, label := range tc.intervals {
			if !regexp.MustCompile(`\(95% interval \d[\d.]*–\d[\d.]*\)`).MatchString(lines[label]) {
				t.Errorf("%s: %s: %q, want its 95%% interval", tc.res.Meta.Name, label, lines[label])
			}
		}
		var md, h bytes.Buffer
		if err := report.Markdown(&md, tc.res, nil); err != nil {
			t.Fatal(err)
		}
		if err := report.HTML(&h, tc.res, nil); err != nil {
			t.Fatal(err)
		}
		method := strings.Index(md.String(), report.Answer(tc.res)[0][:20])
		for _, label := range tc.labels {
			item := "- **" + label + ":** " + strings.ReplaceAll(lines[label], "<", "&lt;")
			if i := strings.Index(md.String(), item+"\n"); i < 0 || i > method {
				t.Errorf("%s: report.md lacks %q before the method text", tc.res.Meta.Name, item)
			}
			if !strings.Contains(h.String(), `<div class="label">`+label+`</div>`) {
				t.Errorf("%s: report.html has no %s card", tc.res.Meta.Name, label)
			}
		}
	}
}

// TestMissingAnswersEndWithNextStep: every answer a run leaves open reads as a short reason
// ending with its next step — what to run or change — in the console (and the same line in
// report.md): on analyses that find no knee (too few levels), no SLO point (none set; the
// first level misses it), no blow-up, no capacity (every level excluded; every level
// sustained), and no demand for replicas.
func TestMissingAnswersEndWithNextStep(t *testing.T) {
	t.Parallel()
	noSLO := analysis.DefaultOptions()
	noSLO.SLO, noSLO.Bootstrap = analysis.SLO{}, 0
	strict := analysis.DefaultOptions()
	strict.SLO.TTFTP95, strict.Bootstrap = 1, 0
	allExcluded := analysistest.Saturating().Levels
	for i := range allExcluded {
		allExcluded[i].Valid, allExcluded[i].Notes = false, []string{"invalid: not steady: the steady-state test failed"}
	}
	for _, tc := range []struct {
		name    string
		levels  []analysis.Level
		opts    analysis.Options
		missing []string
	}{
		{"two levels, no SLO", analysistest.Base([]int{1, 2}).Levels, noSLO, []string{"Knee", "SLO point", "TTFT blow-up", "Replicas"}},
		{"first level misses", analysistest.Saturating().Levels[1:], strict, []string{"SLO point", "Replicas"}},
		{"every level excluded", allExcluded, noSLO, []string{"Max throughput", "Knee", "SLO point", "TTFT blow-up", "Replicas"}},
		{"rate beyond", analysistest.RateBeyond().Levels, noSLO, []string{"Capacity", "SLO point", "Replicas"}},
	} {
		res := analysis.Analyze(tc.levels, analysis.Meta{Name: tc.name}, tc.opts)
		lines, _ := headline(t, &res)
		for _, label := range tc.missing {
			text, ok := lines[label]
			_, next, found := strings.Cut(text, "; next: ")
			if !ok || !found || next == "" || strings.Contains(next, "see the warnings") {
				t.Errorf("%s: %s: %q, want it to end with its next step", tc.name, label, text)
			}
			if !regexp.MustCompile(`--[a-z-]+|plan:|levels|error_classes`).MatchString(next) {
				t.Errorf("%s: %s: next step %q names nothing to run or change", tc.name, label, next)
			}
			if strings.HasPrefix(text, "no SLO set") && !strings.Contains(next, "--slo") {
				t.Errorf("%s: %s: %q, want the step that sets an SLO", tc.name, label, text)
			}
		}
		var md bytes.Buffer
		if err := report.Markdown(&md, &res, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(md.String(), "- **Replicas:** ") {
			t.Errorf("%s: report.md has no replicas line", tc.name)
		}
	}
}

// TestKneeAtBottomIsABound: a knee found at the smallest valid level (levels 64 … 512 of a
// server that saturates at 32: flat from the first) reads as a bound, "≤ 64", with the step
// that measures lower levels, not "≈ 64" alone.
func TestKneeAtBottomIsABound(t *testing.T) {
	t.Parallel()
	opts := analysis.DefaultOptions()
	opts.Bootstrap = 0
	res := analysis.Analyze(analysistest.Base([]int{64, 128, 256, 512}).Levels, analysis.Meta{Name: "flat"}, opts)
	lines, _ := headline(t, &res)
	next := res.NextSteps[analysis.AnswerKnee]
	if next == "" || !strings.Contains(next, "--levels") {
		t.Fatalf("next step of the knee %q, want one that adds levels (warnings %q)", next, res.Warnings)
	}
	if text := lines["Knee"]; !strings.HasPrefix(text, "concurrency ≤ 64;") || !strings.HasSuffix(text, "; next: "+next) {
		t.Errorf("knee: %q, want \"concurrency ≤ 64; …; next: %s\"", text, next)
	}
}

// TestHeadlineIntervalsByPlace: the maximum TPS's interval comes from the level at its place on
// the axis (max_tps_concurrency), not from a level of an equal TPS (an analysis.json whose
// max_tps was rounded apart from its level's); a narrow capacity interval shows its ends apart
// ("10.07–10.08", not "10.1–10.1").
func TestHeadlineIntervalsByPlace(t *testing.T) {
	t.Parallel()
	res := analysistest.Saturating()
	res.Throughput.MaxTPS += 1e-9
	if lines, _ := headline(t, res); !strings.Contains(lines["Max throughput"], "(95% interval ") {
		t.Errorf("max TPS rounded apart from its level's: %q, want its level's 95%% interval", lines["Max throughput"])
	}
	rate := analysistest.Rate()
	rate.Rate.CapacityRPS, rate.Rate.CapacityInterval = 10.075, [2]analysis.Float{10.07, 10.08}
	if lines, _ := headline(t, rate); !strings.Contains(lines["Capacity"], "(95% interval 10.07–10.08)") {
		t.Errorf("narrow capacity interval: %q, want 10.07–10.08", lines["Capacity"])
	}
}

// TestBlowupAtBottomIsABound: levels 64 to 512 of the saturating fixture, where TTFT already
// rises from the first level, put the hinge's blow-up at concurrency 64: the headline gives
// it as "≤ 64" with the step that measures lower levels, not as a point.
func TestBlowupAtBottomIsABound(t *testing.T) {
	t.Parallel()
	opts := analysis.DefaultOptions()
	opts.Bootstrap = 0
	res := analysis.Analyze(analysistest.Base([]int{64, 128, 256, 512}).Levels, analysis.Meta{Name: "flat"}, opts)
	lines, _ := headline(t, &res)
	next := res.NextSteps[analysis.AnswerTTFTBlowup]
	if !strings.Contains(next, "add 16 and 32 to --levels") {
		t.Fatalf("next step of the blow-up %q, want one that adds levels (warnings %q)", next, res.Warnings)
	}
	if text := lines["TTFT blow-up"]; !strings.HasPrefix(text, "concurrency ≤ 64;") || !strings.HasSuffix(text, "; next: "+next) {
		t.Errorf("TTFT blow-up: %q, want \"concurrency ≤ 64; …; next: %s\"", text, next)
	}
}
