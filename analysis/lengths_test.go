package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/kneecap/kneecap/record"
)

// lengthRecords is a level of window [10 s, 20 s) whose prompt and output lengths are worked
// out by hand in TestSummarizeLengths: 64-token prompts the server counts as 240–260 tokens
// (a sub-word tokenizer and a chat template), 128-token fixed outputs.
func lengthRecords() (record.LevelRun, []record.Record) {
	run := record.LevelRun{Concurrency: 1, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
	rec := func(sent int64, prompt, out int, src record.TokensSource) record.Record {
		return record.Record{Phase: record.PhaseMeasure, Sent: sent, TTFT: 100 * time.Millisecond, E2E: 900 * time.Millisecond,
			PromptTokens: prompt, OutputTokens: out, TokensSource: src, Status: record.StatusOK,
			RequestedPromptTokens: 64, RequestedOutputTokens: 128}
	}
	recs := []record.Record{
		rec(11*sec, 240, 128, record.TokensFromUsage),
		rec(12*sec, 250, 128, record.TokensFromUsage),
		rec(13*sec, 260, 128, record.TokensFromUsage),
		rec(14*sec, 244, 128, record.TokensFromUsage),
		// No usage: PromptTokens is the workload's own count (not the server's), N_out the
		// 100 content chunks.
		rec(15*sec, 64, 100, record.TokensFromChunks),
		// The server's prompt_tokens was not believed (PromptTokens is then the request's).
		rec(16*sec, 64, 128, record.TokensFromUsage),
		// Sent in warmup, and a failure: neither counts.
		rec(9*sec, 5000, 5000, record.TokensFromUsage),
		{Phase: record.PhaseMeasure, Sent: 17 * sec, E2E: time.Millisecond, PromptTokens: 9999, Status: record.StatusError,
			ErrorClass: record.ErrHTTP5xx, RequestedPromptTokens: 9999, RequestedOutputTokens: 9999},
	}
	recs[5].UsagePromptTokens = 1e15
	recs[5].TokensNote = "usage.prompt_tokens 1e15 is absurd"
	recs[6].Phase = record.PhaseWarmup
	return run, recs
}

// TestSummarizeLengths: requested vs counted lengths per level (DESIGN §1). Prompts: the
// server's counts 240, 244, 250, 260 (the record without usage and the one whose usage was
// not believed say nothing of the server's count): mean 248.5, p50 (244 + 250) ÷ 2 = 247,
// p95 at h = 3 × 0.95 = 2.85: 250 + 0.85 × 10 = 258.5 (R type 7). Outputs: N_out 100, 128 ×
// 5: mean 123.33…, p50 128, p95 128.
func TestSummarizeLengths(t *testing.T) {
	run, recs := lengthRecords()
	opts := DefaultOptions()
	opts.Lengths = RequestedLengths{FixedOutput: true, InputTokens: 1, OutputTokens: 1} // records say theirs
	lv := Summarize([]record.Level{{Run: run, Records: recs}}, opts)[0]
	check := func(name string, got Float, want float64) {
		t.Helper()
		if !scalar.EqualWithinAbsOrRel(float64(got), want, 1e-12, 1e-12) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("input requested", lv.InputTokens.Requested, 64)
	check("input mean", lv.InputTokens.Mean, 248.5)
	check("input p50", lv.InputTokens.P50, 247)
	check("input p95", lv.InputTokens.P95, 258.5)
	check("output requested", lv.OutputTokens.Requested, 128)
	check("output mean", lv.OutputTokens.Mean, (100+5*128)/6.0)
	check("output p50", lv.OutputTokens.P50, 128)
	check("output p95", lv.OutputTokens.P95, 128)
	check("output mean = mean_output_tokens", lv.OutputTokens.Mean, float64(lv.MeanOutputTokens))
	check("input off (248.5 − 64) ÷ 64", lv.InputTokens.LengthOff(), 184.5/64)
	if !lv.FixedOutput {
		t.Error("fixed_output not carried to the level")
	}
	// Prompts 288% over the request; outputs 3.6% under, within 5%.
	if p, o := lv.LengthsOff(); !p || o {
		t.Errorf("LengthsOff = %v, %v; want true, false", p, o)
	}
}

// TestSummarizeLengthsFallback: records from before requested_prompt_tokens take the
// workload's nominal lengths; a server that reports no usage leaves the counted prompt
// lengths null (the records then hold only the workload's own count), never the request
// dressed as a measurement.
func TestSummarizeLengthsFallback(t *testing.T) {
	run, recs := lengthRecords()
	for i := range recs {
		recs[i].RequestedPromptTokens, recs[i].RequestedOutputTokens = 0, 0
		recs[i].TokensSource, recs[i].UsagePromptTokens = record.TokensFromChunks, 0
	}
	opts := DefaultOptions()
	opts.Lengths = RequestedLengths{InputTokens: 64, OutputTokens: 128}
	lv := Summarize([]record.Level{{Run: run, Records: recs}}, opts)[0]
	if lv.InputTokens.Requested != 64 || lv.OutputTokens.Requested != 128 || lv.FixedOutput {
		t.Errorf("fallback: input %+v, output %+v, fixed %v", lv.InputTokens, lv.OutputTokens, lv.FixedOutput)
	}
	if lv.InputTokens.Mean.OK() || lv.InputTokens.P50.OK() || lv.InputTokens.P95.OK() || !lv.OutputTokens.Mean.OK() {
		t.Errorf("without usage the prompt lengths counted are unknown: %+v (output %+v)", lv.InputTokens, lv.OutputTokens)
	}
	if p, o := lv.LengthsOff(); p || o {
		t.Errorf("LengthsOff = %v, %v: nothing to compare", p, o)
	}
	lv = Summarize([]record.Level{{Run: run, Records: recs}}, DefaultOptions())[0]
	if lv.InputTokens.Requested.OK() || lv.OutputTokens.Requested.OK() {
		t.Errorf("no record and no workload says what was requested: %+v, %+v", lv.InputTokens, lv.OutputTokens)
	}
}

// fastOptions are the default options without bootstrap intervals (not under test here).
func fastOptions() Options {
	o := DefaultOptions()
	o.Bootstrap = 0
	return o
}

// lengthLevels are ground-truth levels 1 … 128 whose prompts were 512 tokens as requested and
// whose 128 fixed output tokens were held.
func lengthLevels() []Level {
	ls := groundTruth(32, geometricLevels(128), 0, 1)
	for i := range ls {
		ls[i].InputTokens = TokenLengths{Requested: 512, Mean: 512, P50: 512, P95: 512}
		ls[i].OutputTokens = TokenLengths{Requested: 128, Mean: 128, P50: 128, P95: 128}
		ls[i].FixedOutput = true
	}
	return ls
}

// TestAnalyzeLengthWarnings: a level whose prompt (or, with fixed_output, output) mean is more
// than 5% off the request is named in a warning with its distribution; 5% is allowed either
// way, and outputs below a max_tokens that was only a cap are not compared.
func TestAnalyzeLengthWarnings(t *testing.T) {
	for v, want := range map[Float]string{64: "64", 247.5: "248", 31.26: "31.3", NaN(): "—", 1e12: "1000000000000"} {
		if got := FormatTokens(v); got != want {
			t.Errorf("FormatTokens(%v) = %q, want %q", float64(v), got, want)
		}
	}
	if r := Analyze(lengthLevels(), Meta{}, fastOptions()); hasWarning(r, "prompt length") || hasWarning(r, "output length") {
		t.Fatalf("lengths as requested: %q", r.Warnings)
	}
	ls := lengthLevels()
	ls[0].InputTokens = TokenLengths{Requested: 64, Mean: 247, P50: 247, P95: 251}
	ls[3].InputTokens = TokenLengths{Requested: 64, Mean: 248, P50: 248, P95: 252}
	ls[1].InputTokens.Mean = 512 * 1.049 // within 5%
	ls[2].InputTokens.Mean = 512 * 0.951
	ls[4].OutputTokens = TokenLengths{Requested: 128, Mean: 40, P50: 31, P95: 110}
	ls[4].FixedOutput = false // max_tokens was a cap: stopping short is no change of workload
	r := Analyze(ls, Meta{}, fastOptions())
	want := "prompt length: the server counted prompts more than 5% off the length requested at concurrency " +
		"1 (mean 247, p50 247, p95 251 vs 64 requested), 8 (mean 248, p50 248, p95 252 vs 64 requested): " +
		"its tokenizer or chat template counts them otherwise"
	if !hasWarning(r, want) {
		t.Errorf("want a warning %q, got %q", want, r.Warnings)
	}
	if hasWarning(r, "output length") {
		t.Errorf("outputs under a max_tokens cap warned about: %q", r.Warnings)
	}
	// fixed_output ignored (an OpenAI-style API, Ollama): the outputs' distribution is named.
	ls[4].FixedOutput = true
	ls[6].OutputTokens = TokenLengths{Requested: 128, Mean: 128 * 1.06, P50: 135, P95: 140}
	r = Analyze(ls, Meta{}, fastOptions())
	want = "output length: fixed_output asked for exactly max_tokens (with ignore_eos and min_tokens), but the outputs were more than 5% off it at concurrency " +
		"16 (mean 40, p50 31, p95 110 vs 128 requested), 64 (mean 136, p50 135, p95 140 vs 128 requested): the server ignores those parameters"
	if !hasWarning(r, want) {
		t.Errorf("want a warning %q, got %q", want, r.Warnings)
	}
	n := 0
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "prompt length") || strings.HasPrefix(w, "output length") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d length warnings, want one for prompts and one for outputs: %q", n, r.Warnings)
	}
	// NaN and a zero request compare nothing.
	ls = lengthLevels()
	ls[0].InputTokens = TokenLengths{Requested: 0, Mean: 247, P50: 247, P95: 251}
	ls[1].InputTokens = TokenLengths{Requested: 64, Mean: NaN(), P50: NaN(), P95: NaN()}
	ls[2].InputTokens = TokenLengths{Requested: Float(math.Inf(1)), Mean: 1, P50: 1, P95: 1}
	if r := Analyze(ls, Meta{}, fastOptions()); hasWarning(r, "prompt length") {
		t.Errorf("unknown lengths warned about: %q", r.Warnings)
	}
}
