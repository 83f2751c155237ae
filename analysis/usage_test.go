package analysis

import (
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/kneecap/kneecap/record"
)

// usageLevel is a level with window [10 s, 20 s) whose records exercise TTFA, reasoning
// tokens, usage not believed and retries; the expected values are worked out by hand in
// TestSummarizeUsage.
func usageLevel() (record.LevelRun, []record.Record) {
	run := record.LevelRun{Index: 0, Concurrency: 2, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
	ok := func(sent int64, ttft, ttfa time.Duration, reasoningChunks, reasoningTokens int) record.Record {
		return record.Record{Phase: record.PhaseMeasure, Sent: sent, TTFT: ttft, TTFA: ttfa, E2E: 2 * time.Second,
			Chunks: us(ttft.Seconds(), 2), OutputTokens: 2, Status: record.StatusOK,
			ReasoningChunks: reasoningChunks, ReasoningTokens: reasoningTokens}
	}
	recs := []record.Record{
		ok(11*sec, 100*time.Millisecond, 900*time.Millisecond, 8, 40), // reasoned: TTFA 900 ms
		ok(12*sec, 200*time.Millisecond, 700*time.Millisecond, 4, 20), // reasoned: TTFA 700 ms
		ok(13*sec, 300*time.Millisecond, 0, 0, 0),                     // answered first: TTFA = TTFT 300 ms
		ok(14*sec, 400*time.Millisecond, 0, 5, 0),                     // reasoning, no answer: no TTFA
		ok(9*sec, 100*time.Millisecond, 5*time.Second, 1, 1000),       // sent in warmup: not counted
	}
	recs[2].Retried = true
	recs[3].TokensNote = "completion_tokens 0 not believed"
	recs = append(recs, record.Record{Phase: record.PhaseMeasure, Sent: 15 * sec, E2E: time.Millisecond, Status: record.StatusError,
		ErrorClass: record.ErrStreamBroken, Retried: true, TokensNote: "prompt_tokens -1 not believed"})
	return run, recs
}

func TestSummarizeUsage(t *testing.T) {
	run, recs := usageLevel()
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	check := func(name string, got Float, want float64) {
		t.Helper()
		if !scalar.EqualWithinAbsOrRel(float64(got), want, 1e-12, 1e-12) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("ttfa mean ms (900, 700, 300)", lv.TTFA.Mean, 1900.0/3)
	check("ttfa p50 ms", lv.TTFA.P50, 700)
	check("ttfa p90 ms (700 + 0.8·200)", lv.TTFA.P90, 860)
	check("mean reasoning tokens (40, 20)", lv.MeanReasoningTokens, 30)
	check("ttft p50 ms: TTFT includes reasoning (100, 200, 300, 400)", lv.TTFT.P50, 250)
	if lv.UsageDisbelieved != 2 || lv.Retried != 2 || lv.Errors != 1 {
		t.Errorf("usage disbelieved %d, retried %d, errors %d; want 2 2 1", lv.UsageDisbelieved, lv.Retried, lv.Errors)
	}
	notes := strings.Join(lv.Notes, "\n")
	for _, want := range []string{"usage not believed for 2 of 5 requests sent in the window (first: completion_tokens 0 not believed)",
		"2 of 5 requests sent in the window were retried once on a fresh connection"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", lv.Notes, want)
		}
	}

	res := Analyze([]Level{lv}, Meta{}, DefaultOptions())
	want := "usage: the usage the server reported was not believed at concurrency 2 (2 of 5 requests)"
	if n := countPrefix(res.Warnings, want); n != 1 {
		t.Errorf("%d warnings %q, want 1 in %q", n, want, res.Warnings)
	}
}

// TestSummarizeUsageNone: without reasoning, TTFA and the mean reasoning tokens stay null
// (TTFA is TTFT) and nothing is noted or warned about.
func TestSummarizeUsageNone(t *testing.T) {
	run, recs := handLevel()
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if lv.TTFA.Mean.OK() || lv.TTFA.P50.OK() || lv.MeanReasoningTokens.OK() || lv.UsageDisbelieved != 0 || lv.Retried != 0 {
		t.Errorf("TTFA %+v, reasoning %v, disbelieved %d, retried %d: want null, null, 0, 0", lv.TTFA, lv.MeanReasoningTokens, lv.UsageDisbelieved, lv.Retried)
	}
	for _, w := range Analyze([]Level{lv}, Meta{}, DefaultOptions()).Warnings {
		if strings.Contains(w, "not believed") {
			t.Errorf("warning %q without usage not believed", w)
		}
	}
}

func countPrefix(ss []string, prefix string) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}
