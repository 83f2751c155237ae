package openai

import (
	"bytes"
	"context"

	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
)

// embedReference is the example response of the OpenAI API reference's "Create embeddings"
// (https://platform.openai.com/docs/api-reference/embeddings/create), its vector cut to the
// three values the reference prints around its ellipsis.
func embedReference(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/embeddings_openai.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeEmbeddingsReference checks the decoder on the API reference's example: one
// embedding for one input, usage.prompt_tokens 8.
func TestDecodeEmbeddingsReference(t *testing.T) {
	n, err := decodeEmbeddings(embedReference(t), 1)
	if err != nil || n != 8 {
		t.Fatalf("prompt_tokens %d, %v; want 8", n, err)
	}
	if _, err := decodeEmbeddings(embedReference(t), 2); err == nil {
		t.Fatal("one embedding for two inputs was accepted")
	}
}

// TestEmbeddingsSimulator sends embeddings requests to the simulator over loopback: each
// record has the inputs, the server's prompt_tokens (words: 5), E2E at least one forward
// pass (step_base + 5 × per_token), and no TTFT, chunks or output tokens.
func TestEmbeddingsSimulator(t *testing.T) {
	emb := sim.Embed{Batch: 4, StepBase: 2 * time.Millisecond, PerToken: 100 * time.Microsecond}
	srv := startSim(t, func(c *sim.Config) { c.Embed = emb })
	c := newClient(t, srv.URL, func(o *Options) { o.API = record.APIEmbeddings; o.Model = sim.DefaultModel })
	for range 3 {
		rec := do(t, c, record.Request{Inputs: []string{"one two three", "four five"}, PromptTokens: 5})
		if rec.Status != record.StatusOK {
			t.Fatalf("%s %s %s", rec.Status, rec.ErrorClass, rec.Error)
		}
		if rec.Inputs != 2 || rec.PromptTokens != 5 || rec.TokensNote != "" {
			t.Errorf("inputs %d prompt %d (%s), want 2 and 5", rec.Inputs, rec.PromptTokens, rec.TokensNote)
		}
		if rec.TTFT != 0 || rec.OutputTokens != 0 || rec.Chunks != nil || rec.ITL != nil || rec.TokensSource != "" {
			t.Errorf("stream fields set: ttft %v out %d chunks %v itl %v source %q", rec.TTFT, rec.OutputTokens, rec.Chunks, rec.ITL, rec.TokensSource)
		}
		if floor := emb.StepBase + 5*emb.PerToken; rec.E2E < floor || rec.End < rec.E2E {
			t.Errorf("E2E %v below one pass %v, or End %v before it", rec.E2E, floor, rec.End)
		}
	}
}

// TestEmbeddingsHostile classifies answers that are not embeddings: each names its problem.
func TestEmbeddingsHostile(t *testing.T) {
	ok := string(embedReference(t))
	tests := []struct {
		name, body string
		status     int
		cut        bool // Content-Length promises more than is sent
		class      record.ErrorClass
		want       string
	}{
		{"reference", ok, 200, false, "", ""},
		{"wrong count", strings.Replace(ok, `"data": [`, `"data": [{"object":"embedding","embedding":[1,2],"index":1},`, 1), 200, false, record.ErrBadChunk, "2 embeddings in data for 1 inputs"},
		{"no usage", `{"object":"list","data":[{"embedding":[0.1,0.2],"index":0}]}`, 200, false, record.ErrBadChunk, "no usage.prompt_tokens"},
		{"error object", `{"error":{"message":"model overloaded","type":"server_error","code":503}}`, 200, false, record.ErrHTTP5xx, "model overloaded"},
		{"vllm error", `{"object":"error","message":"too long","type":"BadRequestError","code":400}`, 200, false, record.ErrHTTP4xx, "too long"},
		{"html", "<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", 200, false, record.ErrBadChunk, "not a JSON object"},
		{"not a vector", `{"data":[{"embedding":null,"index":0}],"usage":{"prompt_tokens":1}}`, 200, false, record.ErrBadChunk, "not a vector"},
		{"empty", "", 200, false, record.ErrBadChunk, "empty body"},
		{"cut", ok[:len(ok)/2], 200, true, record.ErrStreamBroken, "read the body"},
		{"huge", `{"data":[{"embedding":[` + strings.Repeat("0.1,", 1<<12) + `0]}]}`, 200, false, record.ErrBadChunk, "too large"},
		{"500", `{"error":{"message":"boom","type":"server_error","code":500}}`, 500, false, record.ErrHTTP5xx, "boom"},
		{"redirect not followed", "", 302, false, record.ErrRedirect, "an embeddings request answered without its embeddings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body struct {
					Input []string `json:"input"`
				}
				if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&body) != nil || len(body.Input) != 1 {
					http.Error(w, "bad request", 400)
					return
				}
				if tc.cut {
					w.Header().Set("Content-Length", "100000")
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, func(o *Options) { o.API = record.APIEmbeddings; o.MaxBodyBytes = 8 << 10 })
			rec := do(t, c, record.Request{Inputs: []string{"The food was delicious and the waiter..."}, PromptTokens: 8})
			if rec.ErrorClass != tc.class || !strings.Contains(rec.Error, tc.want) {
				t.Fatalf("class %q error %q, want %q containing %q", rec.ErrorClass, rec.Error, tc.class, tc.want)
			}
			if tc.class == "" && (rec.PromptTokens != 8 || rec.Inputs != 1) {
				t.Errorf("prompt %d inputs %d, want 8 and 1", rec.PromptTokens, rec.Inputs)
			}
			if tc.class != "" && !strings.HasPrefix(rec.Error, "openai: embeddings: ") {
				t.Errorf("error %q does not name the embeddings request", rec.Error)
			}
		})
	}
}

// TestEmbeddingsUsageNotBelieved keeps the workload's count when the server's prompt_tokens
// cannot be the inputs' (0 for a 5-token request), and says why.
func TestEmbeddingsUsageNotBelieved(t *testing.T) {
	zero := int64(0)
	srv := startSim(t, func(c *sim.Config) { c.Faults.UsagePromptTokens = &zero })
	c := newClient(t, srv.URL, func(o *Options) { o.API = record.APIEmbeddings; o.Model = sim.DefaultModel })
	rec := do(t, c, record.Request{Inputs: []string{"one two three four five"}, PromptTokens: 5})
	if !rec.OK() || rec.PromptTokens != 5 || !strings.Contains(rec.TokensNote, "prompt_tokens 0 not believed") {
		t.Fatalf("%s %s: prompt %d note %q", rec.Status, rec.Error, rec.PromptTokens, rec.TokensNote)
	}
}

// TestEmbeddingsSilentServer ends a request the server never answers at ttft_timeout, which
// bounds an embeddings answer whole.
func TestEmbeddingsSilentServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := newClient(t, srv.URL, func(o *Options) { o.API = record.APIEmbeddings; o.TTFTTimeout = 50 * time.Millisecond })
	rec := do(t, c, record.Request{Inputs: []string{"x"}, PromptTokens: 1})
	if rec.ErrorClass != record.ErrTimeout || !strings.Contains(rec.Error, "no whole answer within ttft_timeout") {
		t.Fatalf("class %q error %q", rec.ErrorClass, rec.Error)
	}
}

// FuzzDecodeEmbeddings checks the embeddings body decoder on arbitrary bodies: it never
// panics, accepts only valid JSON with one vector per input, and every error it returns is
// classified.
func FuzzDecodeEmbeddings(f *testing.F) {
	f.Add(embedReference(f), 1)
	for _, s := range []string{
		`{"data":[],"usage":{"prompt_tokens":0}}`, `{"error":"plain"}`, `{"object":"error","message":"m","code":"400"}`,
		`{"data":[{"embedding":"AAAAAA==","index":0},{"embedding":[1],"index":0}],"usage":{"prompt_tokens":3}}`,
		`<html>`, `{"data":[{"embedding":[1,2]}],"usage":null}`, `{"data":[{"embedding":[1,2],"index":-1}],"usage":{"prompt_tokens":1}}`,
	} {
		f.Add([]byte(s), 1)
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, body []byte, inputs int) {
		if inputs < 0 || inputs > 1<<10 {
			return
		}
		_, err := decodeEmbeddings(body, inputs)
		if err != nil {
			if classify(err, true) == "" {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if !json.Valid(bytes.TrimSpace(body)) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		var b struct{ Data []json.RawMessage }
		if json.Unmarshal(body, &b) != nil || len(b.Data) != inputs {
			t.Fatalf("accepted %q for %d inputs", body, inputs)
		}
	})
}

// TestEmbedResultKeepsNotes: an embeddings answer whose prompt_tokens is not believed appends
// its note to the record's TokensNote (record.Record.Believe) and keeps any note before it
// (before: the note was assigned over them).
func TestEmbedResultKeepsNotes(t *testing.T) {
	t.Parallel()
	req := &record.Request{Prompt: "hello", PromptTokens: 100}
	st := &reqState{raw: []byte(`{"data":[{"index":0,"embedding":[0.1]}],"usage":{"prompt_tokens":10}}`), sentBytes: 64}
	rec := &record.Record{TokensNote: "earlier"}
	var c Client
	c.embedResult(context.Background(), context.Background(), st, time.Now(), req, rec)
	if rec.PromptTokens != 100 || !strings.HasPrefix(rec.TokensNote, "earlier; prompt_tokens 10 not believed") {
		t.Errorf("prompt %d, note %q; want the requested 100 and the earlier note, then why", rec.PromptTokens, rec.TokensNote)
	}
}
