package record

import (
	"strings"
	"testing"
	"time"
)

// TestFailuresCountNoTokens: of records that each received the same chunks inside the window,
// the successful and the cancelled ones (at the drain, by their user) count their tokens, and
// a failure of any class none (DESIGN §1).
func TestFailuresCountNoTokens(t *testing.T) {
	t.Parallel()
	const w0, w1 = int64(0), int64(time.Second)
	chunks := []int64{100_000, 200_000, 300_000, 400_000} // µs from Sent: all inside the window
	for _, tc := range []struct {
		status Status
		class  ErrorClass
		want   float64
	}{
		{StatusOK, "", 8},
		{StatusCancelled, ErrCancelled, 8},
		{StatusCancelled, ErrUserCancel, 8},
		{StatusError, ErrTimeout, 0},
		{StatusError, ErrStreamBroken, 0},
		{StatusError, ErrHTTP5xx, 0},
		{StatusError, ErrBadChunk, 0},
		{StatusError, "overlong", 0},
		{StatusCancelled, "overlong", 0}, // a class not listed is a failure, whatever its status
		{"", "", 0},                      // no status (rundir refuses one read back): not believed
		{"fine", "", 0},                  // an unknown status
	} {
		rec := Record{Sent: w0, Status: tc.status, ErrorClass: tc.class, Chunks: chunks, OutputTokens: 8,
			TTFT: 100 * time.Millisecond, E2E: 400 * time.Millisecond}
		if got := TokensInWindow(&rec, w0, w1, make([]float64, 4)); got != tc.want {
			t.Errorf("%s/%s with chunks: %g tokens in the window, want %g", tc.status, tc.class, got, tc.want)
		}
		rec.Chunks = nil // spread from TTFT to E2E
		if got := TokensInWindow(&rec, w0, w1, make([]float64, 4)); got != tc.want {
			t.Errorf("%s/%s without chunks: %g tokens in the window, want %g", tc.status, tc.class, got, tc.want)
		}
	}
}

// TestAllFailedNoThroughput: a level whose every request failed after streaming has an output
// TPS of 0 (before: the tokens of its broken streams, 2,271,241 tok/s against a hostile server).
func TestAllFailedNoThroughput(t *testing.T) {
	t.Parallel()
	const w0, w1 = int64(0), int64(time.Second)
	var recs []Record
	for i := range 10 {
		recs = append(recs, Record{Sent: int64(i) * 1e6, Status: StatusError, ErrorClass: ErrStreamBroken,
			Chunks: []int64{1000, 2000}, OutputTokens: 1 << 20, TTFT: time.Millisecond, E2E: 2 * time.Millisecond})
	}
	if got := LevelOutputTPS(recs, w0, w1); got != 0 {
		t.Errorf("output TPS of a level of failures: %g, want 0", got)
	}
	if got := SliceTPS(recs, w0, w1, 10); got[0] != 0 {
		t.Errorf("slice TPS of a level of failures: %v, want 0s", got)
	}
}

// TestRecheck: a record read back is held to the usage rules with what it keeps of its
// stream; what the live client believed passes unchanged.
func TestRecheck(t *testing.T) {
	t.Parallel()
	chunks := []int64{10, 20, 30, 40}
	itl := &ITLSummary{Count: 3, SumUS: 30, MaxUS: 10}
	for _, tc := range []struct {
		name        string
		rec         Record
		out, prompt int
		src         TokensSource
		note        string // a substring of the note added; "" for none
	}{
		{name: "believed", rec: Record{Chunks: chunks, TTFT: 1, OutputTokens: 8, TokensSource: TokensFromUsage, PromptTokens: 90, RequestedPromptTokens: 100},
			out: 8, prompt: 90, src: TokensFromUsage},
		{name: "1e15 from usage", rec: Record{Chunks: chunks, TTFT: 1, OutputTokens: 1e15, TokensSource: TokensFromUsage, RequestedOutputTokens: 4},
			out: 4, src: TokensFromChunks, note: "completion_tokens 1000000000000000 not believed: more than 10000000 (absurd); output_tokens counts the 4 content chunks"},
		{name: "above max_tokens", rec: Record{Chunks: chunks, TTFT: 1, OutputTokens: 5, TokensSource: TokensFromUsage, RequestedOutputTokens: 4},
			out: 4, src: TokensFromChunks, note: "more than the max_tokens 4 sent"},
		{name: "far above the chunks", rec: Record{Chunks: chunks, TTFT: 1, OutputTokens: 4*DefaultTokensPerChunk + 1, TokensSource: TokensFromUsage},
			out: 4, src: TokensFromChunks, note: "more than 64 tokens per content chunk over 4 chunks"},
		{name: "edited, from chunks", rec: Record{Chunks: chunks, TTFT: 1, OutputTokens: 1e15, TokensSource: TokensFromChunks},
			out: 4, src: TokensFromChunks, note: "absurd"},
		{name: "ITL summary only", rec: Record{ITL: itl, TTFT: 1, OutputTokens: 1e15},
			out: 4, src: TokensFromChunks, note: "the 4 content chunks"},
		{name: "chunks unknown", rec: Record{TTFT: 1, OutputTokens: 1000, TokensSource: TokensFromUsage},
			out: 1000, src: TokensFromUsage},
		{name: "already disbelieved", rec: Record{Chunks: chunks, TTFT: 1, OutputTokens: 4, TokensSource: TokensFromChunks, UsageOutputTokens: 1e12, TokensNote: "completion_tokens …"},
			out: 4, src: TokensFromChunks},
		{name: "prompt 1e15", rec: Record{PromptTokens: 1e15, RequestedPromptTokens: 100},
			prompt: 100, note: "prompt_tokens 1000000000000000 not believed: more than 10000000 (absurd); prompt_tokens is the requested 100"},
		{name: "prompt a tenth", rec: Record{PromptTokens: 10, RequestedPromptTokens: 100},
			prompt: 100, note: "less than 25% of the 100 tokens requested"},
	} {
		r := tc.rec
		note := r.Recheck(DefaultTokensPerChunk)
		if r.OutputTokens != tc.out || r.PromptTokens != tc.prompt || r.TokensSource != tc.src {
			t.Errorf("%s: out %d (%s) prompt %d, want %d (%s) %d", tc.name, r.OutputTokens, r.TokensSource, r.PromptTokens, tc.out, tc.src, tc.prompt)
		}
		if (note == "") != (tc.note == "") || !strings.Contains(note, tc.note) || r.TokensNote != tc.rec.TokensNote {
			t.Errorf("%s: note %q (record's %q), want one containing %q", tc.name, note, r.TokensNote, tc.note)
		}
	}
}
