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
	"regexp"
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

// FuzzSSEBody feeds arbitrary bytes, cut into arbitrary reads, through the stream guard and
// checks that it passes the bytes through unchanged except for separators it may drop (see
// checkDropped), stops only at a real limit breach, and reports [DONE] only when the stream
// holds it.
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
		checkDropped(t, data, out, err == nil)
		lines := bytes.Split(data, []byte("\n"))
		longest, nonData := 0, 0
		for _, l := range lines {
			longest = max(longest, len(l))
			// A line is non-data unless it is blank or a data line once trimmed; a line the
			// guard cannot classify from its first headLen bytes after ASCII white space
			// (they are all Unicode white space) counts as non-data too.
			tl := bytes.TrimSpace(l)
			tail := bytes.TrimLeft(l, asciiSpace)
			unknown := len(tail) > headLen && len(bytes.TrimSpace(tail[:headLen])) == 0
			if len(tl) > 0 && (!bytes.HasPrefix(tl, []byte("data:")) || unknown) {
				nonData += len(l)
			}
		}
		switch {
		case err == nil:
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

// checkDropped checks that out is in with nothing changed but some separators dropped, each
// the first blank line ("\n" or "\r\n") after a "data:" line that cannot be go-openai's
// in-stream error line (whose next line go-openai must see, stream_reader.go in go-openai
// v1.43.0), and, when complete, that out holds all of in.
func checkDropped(t *testing.T, in, out []byte, complete bool) {
	t.Helper()
	var lines [][]byte
	for len(in) > 0 {
		i := bytes.IndexByte(in, '\n')
		line := in
		if i >= 0 {
			line = in[:i+1]
		}
		lines = append(lines, line)
		in = in[len(line):]
	}
	if !matchDropped(lines, out, nil, complete) {
		t.Fatalf("output %q is not the input %q less droppable separators", out, bytes.Join(lines, nil))
	}
}

// goOpenAIErrorLine is go-openai v1.43.0's errorPrefix (stream_reader.go), matched against
// the trimmed line.
var goOpenAIErrorLine = regexp.MustCompile(`^data:\s*{"error":`)

// matchDropped reports whether out can be lines less droppable separators; prev is the line
// before lines[0] (nil at the start or after a dropped separator). An eligible separator may
// be dropped or kept (kept when split across reads), so both are tried.
func matchDropped(lines [][]byte, out, prev []byte, complete bool) bool {
	if len(lines) == 0 {
		return len(out) == 0
	}
	line := lines[0]
	if string(line) == "\n" || string(line) == "\r\n" {
		tp := bytes.TrimSpace(prev)
		if prev != nil && bytes.HasPrefix(tp, []byte("data:")) && !goOpenAIErrorLine.Match(tp) &&
			matchDropped(lines[1:], out, nil, complete) {
			return true
		}
	}
	if bytes.HasPrefix(out, line) {
		return matchDropped(lines[1:], out[len(line):], line, complete)
	}
	// An incomplete read may stop anywhere inside a line.
	return !complete && bytes.HasPrefix(line, out)
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
			// Usage plausibility: N_out is never below the chunks, nor above max_tokens
			// unless it is the chunk count.
			c := len(rec.Chunks)
			if rec.OutputTokens < c || rec.OutputTokens > max(req.MaxTokens, c) || rec.ReasoningTokens > rec.OutputTokens {
				t.Fatalf("output tokens %d (reasoning %d) for %d chunks under max_tokens %d", rec.OutputTokens, rec.ReasoningTokens, c, req.MaxTokens)
			}
			if rec.ReasoningChunks > c || rec.TTFA != 0 && (rec.TTFA < rec.TTFT || rec.TTFA > rec.E2E) {
				t.Fatalf("reasoning chunks %d of %d, TTFA %v, TTFT %v, E2E %v", rec.ReasoningChunks, c, rec.TTFA, rec.TTFT, rec.E2E)
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
