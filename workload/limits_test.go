package workload

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// TestInputSizesRefused: a length past record.MaxTokens in a dataset entry or a trace row, as
// an integer or with an exponent, is refused where it is read, naming FILE:LINE, the field,
// the value as written and the limit (before: a trace took up to 2²⁴, an exponent failed as
// "cannot unmarshal number 1e12 into Go struct field …").
func TestInputSizesRefused(t *testing.T) {
	t.Parallel()
	limit := fmt.Sprintf("must be ≤ %d tokens (no model's context holds more)", record.MaxTokens)
	over := fmt.Sprint(record.MaxTokens + 1)
	for _, tc := range []struct {
		name, file, body, want string
	}{
		{"dataset max_tokens", "ds.jsonl", `{"prompt": "a b", "max_tokens": 5}` + "\n" + `{"prompt": "a b", "max_tokens": 1000000000000}`,
			"ds.jsonl:2: max_tokens is 1000000000000: " + limit},
		{"dataset max_tokens 1e12", "ds.jsonl", `{"prompt": "a b", "max_tokens": 1e12}`, "ds.jsonl:1: max_tokens is 1e12: " + limit},
		{"dataset max_tokens past the limit by one", "ds.jsonl", `{"prompt": "a b", "max_tokens": ` + over + `}`, "max_tokens is " + over + ": " + limit},
		{"dataset max_tokens 2.5", "ds.jsonl", `{"prompt": "a b", "max_tokens": 2.5}`, "ds.jsonl:1: max_tokens 2.5: want a whole number of tokens in [0, 10000000]"},
		{"Mooncake input 1e12", "tr.jsonl", `{"timestamp": 0, "input_length": 1e12, "output_length": 3}`, "tr.jsonl:1: input_length is 1e12: " + limit},
		{"Mooncake output", "tr.jsonl", `{"timestamp": 0, "input_length": 5, "output_length": 3}` + "\n" + `{"timestamp": 1, "input_length": 5, "output_length": 16000000}`,
			"tr.jsonl:2: output_length is 16000000: " + limit},
		{"BurstGPT request tokens", "tr.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,m,1000000000000,5,0,x\n",
			"tr.csv:2: Request tokens is 1000000000000: " + limit},
		{"Azure generated tokens", "az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,5,1e12\n",
			"az.csv:2: GeneratedTokens is 1e12: " + limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, tc.file, tc.body)
			var err error
			if strings.HasPrefix(tc.file, "ds") {
				_, err = LoadDataset(WorkloadConfig{Dataset: p, Seed: 1}, record.APIChat)
			} else {
				_, err = LoadTrace(TraceConfig{File: p})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// TestTokenField: a count is any decimal spelling of a whole number (472.0 from a trace
// re-saved through pandas, 5.0e0, 1e3; a big one is refused for its size); a fraction
// (472.5) or what is no decimal number (0x1p3, 1_0, Inf) is none, and neither is a JSON
// string ("5").
func TestTokenField(t *testing.T) {
	t.Parallel()
	want := func(v string) string { return "n " + v + ": want a whole number of tokens in [1, 10000000]" }
	for v, tc := range map[string]struct {
		n   int
		err string
	}{
		"7": {7, ""}, "1e3": {1000, ""}, "2E2": {200, ""}, "10000000": {record.MaxTokens, ""},
		"472.0": {472, ""}, "5.0e0": {5, ""}, "50e-1": {5, ""}, "2.5e1": {25, ""}, "1e7": {record.MaxTokens, ""},
		"0": {0, want("0")}, "-3": {0, want("-3")}, "-3.0": {0, want("-3.0")}, "472.5": {0, want("472.5")},
		"2.5e0": {0, want("2.5e0")}, "1.5": {0, want("1.5")}, "-1e999": {0, want("-1e999")}, ".": {0, want(".")},
		"0x1p3": {0, `n "0x1p3": want`}, "1_0": {0, `n "1_0": want`}, "Inf": {0, `n "Inf": want`}, "": {0, `n "": want`},
		"NaN":      {0, `n "NaN": want`},
		"10000001": {0, "n is 10000001: must be ≤ 10000000 tokens"}, "1e12": {0, "n is 1e12: must be ≤"},
		"1e999": {0, "n is 1e999: must be ≤"}, "99999999999999999999": {0, "n is 99999999999999999999: must be ≤"},
	} {
		n, err := tokenField("n", v, 1)
		if n != tc.n || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("tokenField(%q) = %d, %v; want %d, %q", v, n, err, tc.n, tc.err)
		}
	}
	for _, body := range []string{`{"prompt": "a", "max_tokens": "5"}`, `{"prompt": "a", "max_tokens": 5.5}`} {
		_, err := LoadDataset(WorkloadConfig{Dataset: writeFile(t, "ds.jsonl", body), Seed: 1}, record.APIChat)
		if err == nil || !strings.Contains(err.Error(), "max_tokens") {
			t.Errorf("%s: error %v, want one naming max_tokens", body, err)
		}
	}
	for _, cell := range []string{"0x1p3", "1_0", "472.5"} {
		_, err := LoadTrace(TraceConfig{File: writeFile(t, "tr.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,m,"+cell+",5,0,x\n")})
		if err == nil || !strings.Contains(err.Error(), "Request tokens") {
			t.Errorf("Request tokens %s: error %v, want one naming it", cell, err)
		}
	}
	// A trace re-saved through pandas writes its counts as floats: 472.0 is 472.
	tr, err := LoadTrace(TraceConfig{File: writeFile(t, "tr.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n0,m,472.0,5.0,477.0,x\n1,m,3,2,5,x\n")})
	if err != nil || len(tr.entries) != 2 || tr.entries[0].InputTokens != 472 || tr.entries[0].OutputTokens != 5 {
		t.Errorf("trace of 472.0 and 5.0 tokens: %+v, %v; want the first of 472 and 5", tr, err)
	}
}

// TestDatasetEntrySizes: a prompt or reply of more words than record.MaxTokens, or a
// conversation whose history over its turns would pass it, is refused (checkSize, run on
// every entry before it is kept).
func TestDatasetEntrySizes(t *testing.T) {
	t.Parallel()
	half := record.MaxTokens / 2
	for _, tc := range []struct {
		e    datasetEntry
		want string
	}{
		{datasetEntry{words: record.MaxTokens, outputTokens: record.MaxTokens}, ""},
		{datasetEntry{words: record.MaxTokens + 1}, "the prompt's length in words is 10000001: must be ≤ 10000000"},
		{datasetEntry{words: 3, outputTokens: record.MaxTokens + 1}, "the reply's length in words (the output length) is 10000001:"},
		{datasetEntry{words: 3, turns: []datasetTurn{{words: half, outputTokens: half}}}, ""},
		{datasetEntry{words: 3, turns: []datasetTurn{{words: half, outputTokens: half}, {words: 1, outputTokens: 0}}},
			"the conversation's history over its 2 turns, in words is 10000001: must be ≤ 10000000"},
	} {
		if got := tc.e.checkSize(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.e.words, got, tc.want)
		}
	}
}

// TestDatasetSkipsWarned: entries left out (an empty prompt, a conversation without a human
// turn, no output length) are counted and the first is named with its line (before: dropped
// without a word); a dataset of nothing else is refused naming it.
func TestDatasetSkipsWarned(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "ds.jsonl", `{"prompt": "a b", "max_tokens": 4}`+"\n"+`{"prompt": "  ", "max_tokens": 4}`+"\n"+
		`{"conversations": [{"from": "gpt", "value": "x"}]}`+"\n"+`{"prompt": "c"}`+"\n")
	w, err := NewWorkload(WorkloadConfig{Dataset: p, Seed: 1}, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	want := "dataset " + p + ": 3 of 4 entries left out, the first " + p + ":2: an empty prompt"
	if got := SkipWarning(w); got != want {
		t.Errorf("SkipWarning %q, want %q", got, want)
	}
	for body, first := range map[string]string{
		`{"conversations": [{"from": "gpt", "value": "x"}]}`: ":1: a conversation without a human (or user) turn",
		`{"prompt": "c"}`: ":1: no output length (max_tokens, or the words of a gpt reply)",
	} {
		_, err := LoadDataset(WorkloadConfig{Dataset: writeFile(t, "none.jsonl", body)}, record.APIChat)
		if err == nil || !strings.Contains(err.Error(), "no usable entries (1 skipped: the first ") || !strings.Contains(err.Error(), first) {
			t.Errorf("%s: error %v, want one naming %q", body, err, first)
		}
	}
	if got := SkipWarning(&Synthetic{}); got != "" {
		t.Errorf("synthetic: %q", got)
	}
}

// TestSessionHistoryLimit: synthetic conversations whose nominal last request (turns × (user
// + output tokens)) is past record.MaxTokens are refused by the configuration's check.
func TestSessionHistoryLimit(t *testing.T) {
	t.Parallel()
	cfg := sessionsConfig()
	cfg.Sessions.Turns = Dist{Dist: DistFixed, Mean: 1000}
	cfg.Sessions.UserTokens = Dist{Dist: DistFixed, Mean: 8000}
	cfg.Sessions.OutputTokens = Dist{Dist: DistFixed, Mean: 2001}
	errs := cfg.Validate()
	want := "workload.sessions.turns: a conversation of 1000 turns of 8000 user + 2001 output tokens (its last request) is 10001000: must be ≤ 10000000 tokens"
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), want) {
		t.Errorf("errors %v, want one with %q", errs, want)
	}
	cfg.Sessions.OutputTokens.Mean = 2000
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("at the limit: %v", errs)
	}
	// A length the sessions' own checks refuse (NaN, past the limit) is named once, by them.
	for _, mean := range []float64{math.NaN(), 2e7} {
		cfg.Sessions.OutputTokens.Mean = mean
		errs := cfg.Validate()
		if len(errs) != 1 || strings.Contains(errs[0].Error(), "its last request") {
			t.Errorf("output tokens %v: errors %v, want one, the sessions' own", mean, errs)
		}
	}
}

// TestNumber: a length in a message has every digit below 10¹⁵, an exponent past it.
func TestNumber(t *testing.T) {
	t.Parallel()
	for n, want := range map[float64]string{10000001: "10000001", 2.5: "2.5", 999999999999999: "999999999999999", 1e15: "1e+15", 1e300: "1e+300"} {
		if got := number(n); got != want {
			t.Errorf("number(%v) = %q, want %q", n, got, want)
		}
	}
}

// TestWordCount: wordCount counts as strings.Fields does, without building the fields.
func TestWordCount(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "  ", "a", " a  b\tc\n", "a\u00a0b\u2003c", "\xff\xfe x", "日本 語", strings.Repeat("ab ", 50)} {
		if got, want := wordCount(s), len(strings.Fields(s)); got != want {
			t.Errorf("wordCount(%q) = %d, want %d", s, got, want)
		}
	}
}
