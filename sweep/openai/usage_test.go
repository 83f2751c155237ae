package openai

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// streamOf serves chunks content chunks, then the usage event (none when usage is ""), then
// [DONE].
func streamOf(t *testing.T, chunks int, usage string) *httptest.Server {
	srv, _ := streamOfBody(t, chunks, usage)
	return srv
}

// streamOfBody is streamOf that also keeps the length of the last request body it read.
func streamOfBody(t *testing.T, chunks int, usage string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var body atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body.Store(int64(len(b)))
		s := newSSE(w)
		s.data(roleChunk())
		for i := range chunks {
			s.data(contentChunk(fmt.Sprint(i)))
		}
		if usage != "" {
			s.data(`{"choices":[],"usage":` + usage + `}`)
		}
		s.data("[DONE]")
	}))
	t.Cleanup(srv.Close)
	return srv, &body
}

// TestUsagePlausibility drives each rule of DESIGN §7 over loopback: the usage a server
// reports is believed, or kept beside the count from chunks (output) or the request (prompt)
// with a note naming the rule.
func TestUsagePlausibility(t *testing.T) {
	const prompt = "alpha beta gamma delta" // 22 bytes, 4 words
	tests := []struct {
		name      string
		chunks    int
		usage     string // the usage object, "" for none
		maxTokens int
		// want
		out, promptTokens, reasoning int
		source                       record.TokensSource
		usageOut, usagePrompt        int64
		note                         string // a substring of TokensNote; "" for none
	}{
		{name: "truthful", chunks: 12, usage: `{"prompt_tokens":9,"completion_tokens":12}`, maxTokens: 12,
			out: 12, promptTokens: 9, source: record.TokensFromUsage},
		{name: "no usage", chunks: 12, out: 12, promptTokens: 4, source: record.TokensFromChunks},
		{name: "several tokens a chunk", chunks: 10, usage: `{"prompt_tokens":9,"completion_tokens":40}`,
			out: 40, promptTokens: 9, source: record.TokensFromUsage},
		{name: "completion 1e12", chunks: 16, usage: `{"prompt_tokens":9,"completion_tokens":1000000000000}`, maxTokens: 16,
			out: 16, promptTokens: 9, source: record.TokensFromChunks, usageOut: 1e12, note: "completion_tokens 1000000000000 not believed: more than 10000000 (absurd)"},
		{name: "completion 0 with chunks", chunks: 128, usage: `{"prompt_tokens":9,"completion_tokens":0}`, maxTokens: 128,
			out: 128, promptTokens: 9, source: record.TokensFromChunks, note: "completion_tokens 0 not believed: fewer than the 128 content chunks"},
		{name: "completion negative", chunks: 5, usage: `{"prompt_tokens":9,"completion_tokens":-3}`,
			out: 5, promptTokens: 9, source: record.TokensFromChunks, usageOut: -3, note: "negative"},
		{name: "beyond max_tokens", chunks: 8, usage: `{"prompt_tokens":9,"completion_tokens":9}`, maxTokens: 8,
			out: 8, promptTokens: 9, source: record.TokensFromChunks, usageOut: 9, note: "more than the max_tokens 8 sent"},
		{name: "too many per chunk", chunks: 10, usage: `{"prompt_tokens":9,"completion_tokens":641}`,
			out: 10, promptTokens: 9, source: record.TokensFromChunks, usageOut: 641, note: "more than 64 tokens per content chunk over 10 chunks"},
		{name: "at the per-chunk bound", chunks: 10, usage: `{"prompt_tokens":9,"completion_tokens":640}`,
			out: 640, promptTokens: 9, source: record.TokensFromUsage},
		// OpenAI's reasoning models count reasoning they do not stream.
		{name: "hidden reasoning", chunks: 10, usage: `{"prompt_tokens":9,"completion_tokens":2000,"completion_tokens_details":{"reasoning_tokens":1990}}`,
			out: 2000, promptTokens: 9, reasoning: 1990, source: record.TokensFromUsage},
		{name: "reasoning beyond completion", chunks: 10, usage: `{"prompt_tokens":9,"completion_tokens":10,"completion_tokens_details":{"reasoning_tokens":11}}`,
			out: 10, promptTokens: 9, source: record.TokensFromUsage, note: "reasoning_tokens 11 not believed"},
		{name: "prompt 1e15", chunks: 4, usage: `{"prompt_tokens":1000000000000000,"completion_tokens":4}`,
			out: 4, promptTokens: 4, source: record.TokensFromUsage, usagePrompt: 1e15, note: "prompt_tokens 1000000000000000 not believed: more than 10000000 (absurd); prompt_tokens is the requested 4"},
		// The request's JSON body is about 150 bytes: the bound is its length + 1024.
		{name: "prompt beyond bytes and template", chunks: 4, usage: `{"prompt_tokens":1400,"completion_tokens":4}`,
			out: 4, promptTokens: 4, source: record.TokensFromUsage, usagePrompt: 1400, note: "bytes plus 1024 tokens of chat template"},
		{name: "prompt within bytes and template", chunks: 4, usage: `{"prompt_tokens":1100,"completion_tokens":4}`,
			out: 4, promptTokens: 1100, source: record.TokensFromUsage},
		{name: "prompt 0", chunks: 4, usage: `{"prompt_tokens":0,"completion_tokens":4}`,
			out: 4, promptTokens: 4, source: record.TokensFromUsage, note: "prompt_tokens 0 not believed: less than 25% of the 4 tokens requested"},
		{name: "both", chunks: 4, usage: `{"prompt_tokens":-1,"completion_tokens":-1}`,
			out: 4, promptTokens: 4, source: record.TokensFromChunks, usageOut: -1, usagePrompt: -1, note: "completion_tokens -1 not believed: negative; output_tokens counts the 4 content chunks; prompt_tokens -1 not believed: negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, body := streamOfBody(t, tt.chunks, tt.usage)
			rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: prompt, PromptTokens: 4, MaxTokens: tt.maxTokens})
			if rec.Status != record.StatusOK {
				t.Fatalf("%s %s: %s", rec.Status, rec.ErrorClass, rec.Error)
			}
			if rec.OutputTokens != tt.out || rec.TokensSource != tt.source || rec.PromptTokens != tt.promptTokens || rec.ReasoningTokens != tt.reasoning {
				t.Errorf("out %d (%s) prompt %d reasoning %d, want %d (%s) %d %d", rec.OutputTokens, rec.TokensSource, rec.PromptTokens, rec.ReasoningTokens,
					tt.out, tt.source, tt.promptTokens, tt.reasoning)
			}
			if rec.UsageOutputTokens != tt.usageOut || rec.UsagePromptTokens != tt.usagePrompt {
				t.Errorf("usage kept: output %d prompt %d, want %d %d", rec.UsageOutputTokens, rec.UsagePromptTokens, tt.usageOut, tt.usagePrompt)
			}
			if (tt.note == "") != (rec.TokensNote == "") || !strings.Contains(rec.TokensNote, tt.note) {
				t.Errorf("note %q, want one containing %q", rec.TokensNote, tt.note)
			}
			if n := body.Load(); strings.Contains(tt.note, "bytes plus") && !strings.Contains(rec.TokensNote, fmt.Sprintf("the request's %d bytes", n)) {
				t.Errorf("note %q does not name the %d bytes of the request body", rec.TokensNote, n)
			}
			if rec.RequestedPromptTokens != 4 || rec.RequestedOutputTokens != tt.maxTokens {
				t.Errorf("requested %d/%d, want 4/%d", rec.RequestedPromptTokens, rec.RequestedOutputTokens, tt.maxTokens)
			}
			// One set of rules: the record read back by analyze passes them unchanged.
			again := rec
			if note := again.Recheck(DefaultMaxTokensPerChunk); note != "" || again.OutputTokens != rec.OutputTokens ||
				again.TokensSource != rec.TokensSource || again.PromptTokens != rec.PromptTokens || again.ReasoningTokens != rec.ReasoningTokens {
				t.Errorf("read back: %q, out %d (%s) prompt %d reasoning %d", note, again.OutputTokens, again.TokensSource, again.PromptTokens, again.ReasoningTokens)
			}
		})
	}
}

// TestReasoningStream: reasoning content (both field names) counts for TTFT, the first answer
// chunk sets TTFA, reasoning-only chunks are counted apart, reasoning tokens come from
// usage.completion_tokens_details, and N_out counts both kinds.
func TestReasoningStream(t *testing.T) {
	const gap = 30 * time.Millisecond
	for _, field := range []string{"reasoning_content", "reasoning"} {
		t.Run(field, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s := newSSE(w)
				s.data(roleChunk())
				for range 3 {
					s.data(`{"choices":[{"index":0,"delta":{"` + field + `":"hm"}}]}`)
				}
				time.Sleep(gap) // server-side delay: TTFA must be at least this long
				s.data(contentChunk("answer"))
				s.data(contentChunk("!"))
				s.data(usageDetailsChunk(5, 5, 3))
				s.data("[DONE]")
			}))
			defer srv.Close()
			rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "why", PromptTokens: 1, MaxTokens: 5})
			if rec.Status != record.StatusOK {
				t.Fatalf("%s %s", rec.Status, rec.Error)
			}
			if rec.CachedTokens == nil || *rec.CachedTokens != 2 {
				t.Errorf("cached tokens %v, want 2 (prompt_tokens_details.cached_tokens)", rec.CachedTokens)
			}
			if rec.ReasoningChunks != 3 || rec.ReasoningTokens != 3 || rec.OutputTokens != 5 || len(rec.Chunks) != 5 {
				t.Errorf("reasoning chunks %d tokens %d, output %d, chunks %d; want 3 3 5 5", rec.ReasoningChunks, rec.ReasoningTokens, rec.OutputTokens, len(rec.Chunks))
			}
			// The answer leaves the server at least gap after the request came, so TTFA ≥ gap;
			// TTFA − TTFT can be a little under gap when the client read the first chunk late.
			if rec.TTFT <= 0 || rec.TTFA <= rec.TTFT || rec.TTFA < gap {
				t.Errorf("TTFT %v TTFA %v: want 0 < TTFT < TTFA and TTFA ≥ the server's pause %v", rec.TTFT, rec.TTFA, gap)
			}
			if got := time.Duration(rec.Chunks[3]) * time.Microsecond; got != rec.TTFA.Truncate(time.Microsecond) {
				t.Errorf("TTFA %v is not the first answer chunk's offset %v", rec.TTFA, got)
			}
		})
	}
}

// TestNoTTFAWithoutReasoningFirst: TTFA stays 0 (it is TTFT) when the first content chunk
// carries an answer, for chat with reasoning in the same chunk and for completions' text.
func TestNoTTFAWithoutReasoningFirst(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(`{"choices":[{"index":0,"delta":{"reasoning_content":"hm","content":"a"}}]}`)
		s.data(`{"choices":[{"index":0,"text":"b"}]}`)
		s.data(usageChunk(1, 2))
		s.data("[DONE]")
	}))
	defer srv.Close()
	rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "x", PromptTokens: 1})
	if rec.Status != record.StatusOK || rec.TTFA != 0 || rec.ReasoningChunks != 0 || rec.OutputTokens != 2 {
		t.Errorf("%s TTFA %v reasoning chunks %d out %d, want ok 0 0 2", rec.Status, rec.TTFA, rec.ReasoningChunks, rec.OutputTokens)
	}
}

// TestUsageLyingSweep: a server whose usage says completion_tokens 1e12 for streams of 8
// content chunks. Through a real sweep and the analysis, every level warns by name that the
// usage was not believed, and its TPS comes from the chunks: N_out is exactly 8 and output
// TPS ≈ QPS × 8 (the identity of DESIGN §1, within 15%: window edges), not 1e13 tokens/s.
func TestUsageLyingSweep(t *testing.T) {
	srv := streamOf(t, 8, `{"prompt_tokens":9,"completion_tokens":1000000000000}`)
	recs, runs := runSweepRuns(t, newClient(t, srv.URL, nil), []int{1, 2})
	checkLyingLevels(t, recs, runs, 8)
}

// checkLyingLevels summarises and analyses a sweep whose server lied in every usage and
// checks each level against chunks content chunks per request.
func checkLyingLevels(t *testing.T, recs []record.Record, runs []record.LevelRun, chunks int) {
	t.Helper()
	levels := analysis.Summarize(record.GroupRecords(runs, recs), analysis.DefaultOptions())
	res := analysis.Analyze(levels, analysis.Meta{}, analysis.DefaultOptions())
	for _, lv := range levels {
		if lv.Requests == 0 || lv.UsageDisbelieved != lv.Requests || lv.Errors != 0 {
			t.Errorf("level %d: usage not believed for %d of %d requests (%d errors), want all", lv.Concurrency, lv.UsageDisbelieved, lv.Requests, lv.Errors)
		}
		if lv.MeanOutputTokens != analysis.Float(chunks) || !lv.TPOT.P50.OK() {
			t.Errorf("level %d: mean N_out %v, TPOT p50 %v; want %d from chunks and a TPOT", lv.Concurrency, lv.MeanOutputTokens, lv.TPOT.P50, chunks)
		}
		if want := float64(lv.QPS) * float64(chunks); !(math.Abs(float64(lv.OutputTPS)-want) <= 0.15*want) {
			t.Errorf("level %d: output TPS %v, want ≈ QPS × %d = %v", lv.Concurrency, lv.OutputTPS, chunks, want)
		}
		part := fmt.Sprintf("%d (%d of %d requests)", lv.Concurrency, lv.Requests, lv.Requests)
		if !slices.ContainsFunc(res.Warnings, func(w string) bool {
			return strings.HasPrefix(w, "usage: the usage the server reported was not believed at concurrency ") && strings.Contains(w, part)
		}) {
			t.Errorf("no usage warning naming %q in %q", part, res.Warnings)
		}
	}
	if res.Throughput.MaxTPS.OK() && res.Throughput.MaxTPS > 1e6 {
		t.Errorf("headline %v tokens/s: the lying usage was believed", res.Throughput.MaxTPS)
	}
}
