package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Seeds shared by the fuzz targets: well-formed streams of vLLM, SGLang and llama.cpp
// shapes, and the hostile shapes of the fault suite. The committed corpora under
// testdata/fuzz hold more.
var streamSeeds = []string{
	"data: " + roleChunk() + "\n\ndata: " + contentChunk("a") + "\n\ndata: " + usageChunk(1, 1) + "\n\ndata: [DONE]\n\n",
	"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n",
	"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\n\ndata:[DONE]\n\n",
	": keep-alive\n\nevent: message\ndata: " + contentChunk("x") + "\r\n\r\ndata: [DONE]\r\n\r\n",
	"data: " + contentChunk("a") + "\n\ndata: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\ndata: [DONE]\n\n",
	"data: {\"object\":\"error\",\"message\":\"too long\",\"code\":\"400\"}\n\n",
	"data: {\"choices\":[{\"delta\":{\"content\":\"a\"\n\n",
	"data: " + contentChunk("a") + "\n\n",
	"data: [DONE]",
	"",
}

// FuzzChunkDecode checks the chunk decoder on arbitrary payloads: it never panics, accepts
// only valid JSON, and a decoder reused after another payload (its buffers are recycled)
// says exactly what a fresh one says.
func FuzzChunkDecode(f *testing.F) {
	for _, s := range []string{
		roleChunk(), contentChunk("a"), usageChunk(3, 7), `{"choices":[{"text":"a"},{"text":""}]}`,
		`{"choices":[{"delta":{"reasoning":"r"}}],"usage":null}`, `{"error":"plain string"}`,
		`{"object":"error","message":"m","code":500}`, `{"choices":5}`, `[DONE]`, `{"usage":{"completion_tokens":-1}}`,
	} {
		f.Add([]byte(s), []byte(contentChunk("b")))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var reused chunkDecoder
		_, _ = reused.decode(first)
		got, gotErr := reused.decode(second)
		var fresh chunkDecoder
		want, wantErr := fresh.decode(second)
		if sansReply(got) != sansReply(want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("reused decoder: %+v, %v; fresh: %+v, %v", got, gotErr, want, wantErr)
		}
		if wantErr == nil && !json.Valid(second) {
			t.Fatalf("accepted invalid JSON %q", second)
		}
		if wantErr != nil && classify(wantErr, true) == "" {
			t.Fatalf("unclassified error %v", wantErr)
		}
	})
}

// chunkedReader returns at most n bytes per Read, like a network stream.
type chunkedReader struct {
	r io.Reader
	n int
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// FuzzStream sends an arbitrary body as a 200 text/event-stream answer to the real client
// over loopback HTTP (the prompt carries it, base64-encoded, to the server) and checks the
// record: Do returns within the request timeout; a success has content chunks with
// non-decreasing offsets, TTFT > 0 and E2E ≥ TTFT; a failure has one of DESIGN §7's classes.
func FuzzStream(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", 400)
			return
		}
		body, err := base64.StdEncoding.DecodeString(req.Messages[0].Content)
		if err != nil {
			http.Error(w, "bad base64", 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write(body)
	}))
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL + "/v1", Model: "m", RecordChunks: true, RequestTimeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := record.Request{Prompt: base64.StdEncoding.EncodeToString(body), PromptTokens: 1, MaxTokens: 4}
		var rec record.Record
		start := time.Now()
		c.Do(context.Background(), &req, &rec)
		if el := time.Since(start); el > 5*time.Second+time.Second {
			t.Fatalf("Do took %v", el)
		}
		switch rec.Status {
		case record.StatusOK:
			if len(rec.Chunks) == 0 || rec.TTFT <= 0 || rec.E2E < rec.TTFT || rec.ErrorClass != "" {
				t.Fatalf("inconsistent success: %+v", rec)
			}
			if !slices.IsSorted(rec.Chunks) {
				t.Fatalf("chunk offsets not sorted: %v", rec.Chunks)
			}
			// Usage plausibility: N_out is never below the chunks, nor above max_tokens
			// unless it is the chunk count.
			c := len(rec.Chunks)
			if rec.OutputTokens < c || rec.OutputTokens > max(req.MaxTokens, c) || rec.ReasoningTokens > rec.OutputTokens {
				t.Fatalf("output tokens %d (reasoning %d) for %d chunks under max_tokens %d", rec.OutputTokens, rec.ReasoningTokens, c, req.MaxTokens)
			}
			if rec.ReasoningChunks > c || rec.TTFA != 0 && (rec.TTFA < rec.TTFT || rec.TTFA > rec.E2E) {
				t.Fatalf("reasoning chunks %d of %d, TTFA %v, TTFT %v, E2E %v", rec.ReasoningChunks, c, rec.TTFA, rec.TTFT, rec.E2E)
			}
		case record.StatusError:
			if !slices.Contains(designClasses, rec.ErrorClass) || rec.Error == "" {
				t.Fatalf("error record with class %q (%s)", rec.ErrorClass, rec.Error)
			}
		default:
			t.Fatalf("status %q", rec.Status)
		}
		if reflect.DeepEqual(rec, record.Record{}) {
			t.Fatal("empty record")
		}
	})
}
