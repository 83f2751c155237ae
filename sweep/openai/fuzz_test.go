package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kneecap/kneecap/sweep"
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
		if got != want || (gotErr == nil) != (wantErr == nil) {
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

// FuzzSSEBody feeds arbitrary bytes, cut into arbitrary reads, through the stream guard and
// checks that it passes the bytes through unchanged, stops only at a real limit breach, and
// reports [DONE] only when the stream holds it.
func FuzzSSEBody(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s), uint8(7))
	}
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(255))
	f.Add([]byte(": c\n: c\n: c\n: c\n: c\n: c\n"), uint8(1))
	const maxLine, maxNonData = 128, 16
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		b := &sseBody{rc: io.NopCloser(&chunkedReader{r: bytes.NewReader(data), n: int(step) + 1}), maxLine: maxLine, maxNonData: maxNonData}
		out, err := io.ReadAll(b)
		if !bytes.HasPrefix(data, out) {
			t.Fatalf("passed %q, not a prefix of the input", out)
		}
		lines := bytes.Split(data, []byte("\n"))
		longest, nonData := 0, 0
		for _, l := range lines {
			longest = max(longest, len(l))
			if tl := bytes.TrimSpace(l); len(tl) > 0 && !bytes.HasPrefix(tl, []byte("data:")) {
				nonData += len(l)
			}
		}
		switch {
		case err == nil:
			if len(out) != len(data) {
				t.Fatalf("stopped after %d of %d bytes without an error", len(out), len(data))
			}
			if longest > maxLine {
				t.Fatalf("a %d-byte line passed the %d-byte cap", longest, maxLine)
			}
			if nonData > maxNonData {
				t.Fatalf("%d non-data bytes passed the %d-byte cap", nonData, maxNonData)
			}
		case errors.Is(err, errLineTooLong):
			if longest <= maxLine {
				t.Fatalf("line cap hit with lines of at most %d bytes", longest)
			}
		case errors.Is(err, errNonDataTooLong):
			if nonData <= maxNonData {
				t.Fatalf("non-data cap hit with %d non-data bytes", nonData)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
		if b.sawDone && !bytes.Contains(data, []byte("[DONE]")) {
			t.Fatal("saw [DONE] in a stream without it")
		}
	})
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
		req := sweep.Request{Prompt: base64.StdEncoding.EncodeToString(body), PromptTokens: 1, MaxTokens: 4}
		var rec sweep.Record
		start := time.Now()
		c.Do(context.Background(), &req, &rec)
		if el := time.Since(start); el > 5*time.Second+time.Second {
			t.Fatalf("Do took %v", el)
		}
		switch rec.Status {
		case sweep.StatusOK:
			if len(rec.Chunks) == 0 || rec.TTFT <= 0 || rec.E2E < rec.TTFT || rec.ErrorClass != "" {
				t.Fatalf("inconsistent success: %+v", rec)
			}
			if !slices.IsSorted(rec.Chunks) {
				t.Fatalf("chunk offsets not sorted: %v", rec.Chunks)
			}
		case sweep.StatusError:
			if !slices.Contains(designClasses, rec.ErrorClass) || rec.Error == "" {
				t.Fatalf("error record with class %q (%s)", rec.ErrorClass, rec.Error)
			}
		default:
			t.Fatalf("status %q", rec.Status)
		}
		if reflect.DeepEqual(rec, sweep.Record{}) {
			t.Fatal("empty record")
		}
	})
}
