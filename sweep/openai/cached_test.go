package openai

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// TestCachedTokens: usage.prompt_tokens_details.cached_tokens (OpenAI's usage; vLLM with
// --enable-prompt-tokens-details; SGLang) reaches the record, a reported 0 stays 0 and an
// absent or null count stays nil (not reported); a count outside [0, prompt_tokens] is not
// believed, with a note.
func TestCachedTokens(t *testing.T) {
	for _, tt := range []struct {
		name, usage string
		want        int // -1: nil
		note        string
	}{
		{"reported", `{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8}}`, 8, ""},
		{"zero", `{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":0}}`, 0, ""},
		{"absent", `{"prompt_tokens":9,"completion_tokens":4}`, -1, ""},
		{"null details", `{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":null}`, -1, ""},
		{"null count", `{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":null,"audio_tokens":0}}`, -1, ""},
		{"beyond the prompt", `{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":10}}`, -1, "cached_tokens 10 not believed: outside [0, prompt_tokens 9]"},
		{"negative", `{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":-1}}`, -1, "cached_tokens -1 not believed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := streamOf(t, 4, tt.usage)
			rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "alpha beta gamma delta", PromptTokens: 4, MaxTokens: 4})
			if rec.Status != record.StatusOK {
				t.Fatalf("%s: %s", rec.Status, rec.Error)
			}
			switch {
			case tt.want < 0 && rec.CachedTokens != nil:
				t.Errorf("cached %d, want not reported", *rec.CachedTokens)
			case tt.want >= 0 && (rec.CachedTokens == nil || *rec.CachedTokens != tt.want):
				t.Errorf("cached %v, want %d", rec.CachedTokens, tt.want)
			}
			if (tt.note == "") != (rec.TokensNote == "") || !strings.Contains(rec.TokensNote, tt.note) {
				t.Errorf("note %q, want %q", rec.TokensNote, tt.note)
			}
		})
	}
	// Both decoders read it alike, and the fast path takes the common shape.
	const common = `{"id":"x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8}}}`
	r, ok := scanChunk([]byte(common))
	if !ok || r.usage.cached != (optCount{n: 8, set: true}) {
		t.Errorf("scanChunk: %+v, %v", r, ok)
	}
	checkScan(t, []byte(common))
}
