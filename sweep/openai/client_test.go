package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// sse writes server-sent-event lines with a flush after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, f: w.(http.Flusher)}
}

func (s *sse) data(v string) {
	fmt.Fprintf(s.w, "data: %s\n\n", v)
	s.f.Flush()
}

func roleChunk() string {
	return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
}

func contentChunk(s string) string {
	return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, s)
}

// toolChunk is a chat chunk streaming a part args of a tool call's arguments (JSON-escaped).
func toolChunk(args string) string {
	return `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` +
		args + `"}}]},"finish_reason":null}]}`
}

func usageChunk(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		prompt, completion, prompt+completion)
}

func newClient(t testing.TB, url string, mod func(*Options)) *Client {
	t.Helper()
	o := Options{BaseURL: url + "/v1", Model: "m", RecordChunks: true, RequestTimeout: 10 * time.Second}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func do(t testing.TB, c *Client, req record.Request) record.Record {
	t.Helper()
	var rec record.Record
	c.Do(context.Background(), &req, &rec)
	return rec
}

func TestRoleOnlyChunkDoesNotSetTTFT(t *testing.T) {
	const gap = 30 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(roleChunk())
		time.Sleep(gap) // server-side delay: TTFT must be at least this long
		for _, w := range []string{"a", "b", "c"} {
			s.data(contentChunk(w))
		}
		s.data(usageChunk(7, 3))
		s.data("[DONE]")
	}))
	defer srv.Close()
	rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "hi there", PromptTokens: 2, MaxTokens: 3})
	if rec.Status != record.StatusOK {
		t.Fatalf("status %s %s: %s", rec.Status, rec.ErrorClass, rec.Error)
	}
	if rec.TTFT < gap {
		t.Errorf("TTFT %v < %v: the role-only chunk was counted", rec.TTFT, gap)
	}
	if len(rec.Chunks) != 3 {
		t.Fatalf("chunks %d, want 3 content chunks", len(rec.Chunks))
	}
	if got := time.Duration(rec.Chunks[0]) * time.Microsecond; got != rec.TTFT.Truncate(time.Microsecond) {
		t.Errorf("first chunk offset %v != TTFT %v", got, rec.TTFT)
	}
	if time.Duration(rec.Chunks[2])*time.Microsecond != rec.E2E.Truncate(time.Microsecond) {
		t.Errorf("E2E %v != last chunk offset %dus", rec.E2E, rec.Chunks[2])
	}
	if rec.OutputTokens != 3 || rec.TokensSource != record.TokensFromUsage || rec.PromptTokens != 7 {
		t.Errorf("tokens out=%d src=%s prompt=%d, want 3 usage 7", rec.OutputTokens, rec.TokensSource, rec.PromptTokens)
	}
	if rec.Sent == 0 || rec.ConnWait < 0 {
		t.Errorf("sent %d connwait %v", rec.Sent, rec.ConnWait)
	}
}

func TestTokensFromChunksWithoutUsage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(roleChunk())
		for i := range 5 {
			s.data(contentChunk(fmt.Sprint(i)))
		}
		s.data("[DONE]")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(o *Options) { o.RecordChunks = false })
	rec := do(t, c, record.Request{Prompt: "a b c", PromptTokens: 3})
	if rec.Status != record.StatusOK || rec.OutputTokens != 5 || rec.TokensSource != record.TokensFromChunks {
		t.Fatalf("got %s out=%d src=%s err=%s", rec.Status, rec.OutputTokens, rec.TokensSource, rec.Error)
	}
	if rec.PromptTokens != 3 {
		t.Errorf("prompt tokens %d, want the request's 3", rec.PromptTokens)
	}
	if rec.Chunks != nil || rec.ITL == nil || rec.ITL.Count != 4 {
		t.Fatalf("chunks %v itl %+v, want ITL summary of 4 gaps", rec.Chunks, rec.ITL)
	}
	if rec.ITL.MaxUS > rec.ITL.SumUS || time.Duration(rec.ITL.SumUS)*time.Microsecond > rec.E2E-rec.TTFT+time.Microsecond {
		t.Errorf("ITL %+v inconsistent with E2E−TTFT %v", rec.ITL, rec.E2E-rec.TTFT)
	}
}

// TestErrorClasses drives each failure mode over loopback HTTP.
func TestErrorClasses(t *testing.T) {
	const key = "sk-test-SECRETKEY-1234"
	tests := []struct {
		name    string
		handler http.HandlerFunc
		class   record.ErrorClass
		timeout time.Duration
	}{
		{"400", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"bad key `+key+`","type":"invalid_request_error","code":400}}`)
		}, record.ErrHTTP4xx, 0},
		{"401 plain body echoing the key", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			io.WriteString(w, "unauthorized: "+r.Header.Get("Authorization"))
		}, record.ErrHTTP4xx, 0},
		{"429", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
		}, record.ErrHTTP429, 0},
		{"503", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(503)
			io.WriteString(w, "overloaded")
		}, record.ErrHTTP5xx, 0},
		{"missing DONE", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(contentChunk("a"))
			s.data(contentChunk("b"))
		}, record.ErrStreamBroken, 0},
		{"connection cut mid-stream", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(contentChunk("a"))
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}, record.ErrStreamBroken, 0},
		{"bad chunk", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(contentChunk("a"))
			s.data(`{"choices":[{"delta":{"content":"b"`)
			s.data("[DONE]")
		}, record.ErrBadChunk, 0},
		{"empty", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(roleChunk())
			s.data(usageChunk(3, 0))
			s.data("[DONE]")
		}, record.ErrEmpty, 0},
		{"error object in stream (vLLM)", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(contentChunk("a"))
			s.data(`{"error":{"object":"error","message":"engine dead","type":"InternalServerError","code":500}}`)
			s.data("[DONE]")
		}, record.ErrHTTP5xx, 0},
		{"top-level error object in stream", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(`{"object":"error","message":"prompt too long","type":"BadRequestError","code":400}`)
			s.data("[DONE]")
		}, record.ErrHTTP4xx, 0},
		{"hostile long line", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(contentChunk("a"))
			junk := strings.Repeat("x", 64<<10)
			for range 64 { // 4 MiB without a newline
				io.WriteString(w, junk)
			}
		}, record.ErrBadChunk, 0},
		{"stall past request timeout", func(w http.ResponseWriter, r *http.Request) {
			s := newSSE(w)
			s.data(contentChunk("a"))
			<-r.Context().Done()
		}, record.ErrTimeout, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c := newClient(t, srv.URL, func(o *Options) {
				o.APIKey = key
				if tt.timeout > 0 {
					o.RequestTimeout = tt.timeout
				}
			})
			rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4})
			if rec.Status != record.StatusError || rec.ErrorClass != tt.class {
				t.Fatalf("status %s class %q, want error %q (%s)", rec.Status, rec.ErrorClass, tt.class, rec.Error)
			}
			if rec.Error == "" {
				t.Error("empty error message")
			}
			if strings.Contains(rec.Error, "SECRETKEY") {
				t.Errorf("API key leaked into error: %s", rec.Error)
			}
			if len(rec.Error) > maxErrorLen+8 {
				t.Errorf("error message %d bytes, want ≤ %d", len(rec.Error), maxErrorLen)
			}
		})
	}
}

func TestConnectError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rec := do(t, newClient(t, "http://"+addr, nil), record.Request{Prompt: "x"})
	if rec.Status != record.StatusError || rec.ErrorClass != record.ErrConnect {
		t.Fatalf("status %s class %q (%s), want connect", rec.Status, rec.ErrorClass, rec.Error)
	}
	if _, err := newClient(t, "http://"+addr, nil).Models(context.Background()); err == nil {
		t.Error("Models on a closed port: want error")
	}
}

func TestCancelled(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(contentChunk("a"))
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var rec record.Record
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Do(ctx, &record.Request{Prompt: "x"}, &rec)
	}()
	<-started
	cancel()
	<-done
	if rec.Status != record.StatusCancelled || rec.ErrorClass != record.ErrCancelled {
		t.Fatalf("status %s class %s (%s), want cancelled", rec.Status, rec.ErrorClass, rec.Error)
	}
}

func TestRequestBodyExtraFieldsAndAuth(t *testing.T) {
	const key = "sk-abc-123"
	var (
		mu     sync.Mutex
		bodies []map[string]any
		auths  []string
		paths  []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		bodies = append(bodies, m)
		auths = append(auths, r.Header.Get("Authorization"))
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		s := newSSE(w)
		s.data(`{"choices":[{"index":0,"text":"hello"}]}`)
		s.data(contentChunk("x"))
		s.data("[DONE]")
	}))
	defer srv.Close()
	for _, api := range []record.API{record.APIChat, record.APICompletions} {
		c := newClient(t, srv.URL, func(o *Options) {
			o.API = api
			o.APIKey = key
			o.ExtraBody = map[string]any{"top_k": 5, "skip_special_tokens": false}
		})
		rec := do(t, c, record.Request{Prompt: "one two", PromptTokens: 2, MaxTokens: 16, IgnoreEOS: true})
		if rec.Status != record.StatusOK || rec.OutputTokens != 2 {
			t.Fatalf("%s: status %s out %d (%s)", api, rec.Status, rec.OutputTokens, rec.Error)
		}
	}
	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	for i, b := range bodies {
		if auths[i] != "Bearer "+key {
			t.Errorf("authorization %q", auths[i])
		}
		want := map[string]any{"ignore_eos": true, "min_tokens": 16.0, "max_tokens": 16.0, "top_k": 5.0,
			"skip_special_tokens": false, "stream": true, "model": "m"}
		for k, v := range want {
			if b[k] != v {
				t.Errorf("%s: body[%s] = %v, want %v", paths[i], k, b[k], v)
			}
		}
		so, _ := b["stream_options"].(map[string]any)
		if so["include_usage"] != true {
			t.Errorf("%s: stream_options %v", paths[i], b["stream_options"])
		}
	}
	if paths[0] != "/v1/chat/completions" || paths[1] != "/v1/completions" {
		t.Errorf("paths %v", paths)
	}
	if msgs, _ := bodies[0]["messages"].([]any); len(msgs) != 1 {
		t.Errorf("chat messages %v", bodies[0]["messages"])
	}
	if bodies[1]["prompt"] != "one two" {
		t.Errorf("completions prompt %v", bodies[1]["prompt"])
	}
}

func TestConnectionReuse(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(contentChunk("a"))
		s.data(usageChunk(1, 1))
		s.data("[DONE]")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	for range 20 {
		if rec := do(t, c, record.Request{Prompt: "x"}); rec.Status != record.StatusOK {
			t.Fatal(rec.Error)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 sequential requests opened %d connections, want 1 (body not drained after [DONE]?)", n)
	}
}

func TestModels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"llama","object":"model"},{"id":"qwen","object":"model"}]}`)
	}))
	defer srv.Close()
	ids, err := newClient(t, srv.URL, nil).Models(context.Background())
	if err != nil || len(ids) != 2 || ids[0] != "llama" || ids[1] != "qwen" {
		t.Fatalf("models %v, %v", ids, err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, o := range []Options{{BaseURL: "localhost:8000"}, {BaseURL: "http://x/v1", API: "rerank"},
		{BaseURL: "http://x/v1", CAFile: "/nonexistent/ca.pem"},
		// A YAML mapping with non-string keys has no JSON encoding: a config error at New.
		{BaseURL: "http://x/v1", ExtraBody: map[string]any{"logit_bias": map[any]any{1: 2}}}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v): want error", o)
		}
	}
}

// oneByteReader returns at most n bytes per Read.
type oneByteReader struct {
	s string
	n int
}

func (r *oneByteReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.s))
	copy(p, r.s[:k])
	r.s = r.s[k:]
	return k, nil
}

// TestChunksCapacityBounded: a loose max_tokens (a model's whole context) neither
// preallocates that many offsets nor leaves the unused capacity in the record, which the
// sweep keeps until the end (the record's memory follows the chunks that arrived).
func TestChunksCapacityBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := newSSE(w)
		for range 3 {
			s.data(contentChunk("x"))
		}
		s.data("[DONE]")
	}))
	defer srv.Close()
	rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "a", PromptTokens: 1, MaxTokens: 1 << 17})
	if rec.Status != record.StatusOK || len(rec.Chunks) != 3 {
		t.Fatalf("status %s (%s), %d chunks, want ok and 3", rec.Status, rec.Error, len(rec.Chunks))
	}
	if c := cap(rec.Chunks); c > 2*len(rec.Chunks) {
		t.Errorf("record keeps capacity for %d chunks, %d arrived", c, len(rec.Chunks))
	}
}

// TestReasoningModelMaxCompletionTokens: OpenAI's reasoning models reject max_tokens, so for
// them (go-openai's ReasoningValidator: o1, o3, o4, gpt-5 prefixes) the limit is sent as
// max_completion_tokens; other models keep max_tokens.
func TestReasoningModelMaxCompletionTokens(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Error(err)
		}
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		s := newSSE(w)
		s.data(contentChunk("x"))
		s.data("[DONE]")
	}))
	defer srv.Close()
	for _, model := range []string{"o3-mini", "llama"} {
		c := newClient(t, srv.URL, func(o *Options) { o.Model = model })
		if rec := do(t, c, record.Request{Prompt: "a", PromptTokens: 1, MaxTokens: 7}); rec.Status != record.StatusOK {
			t.Fatalf("%s: %s %s", model, rec.Status, rec.Error)
		}
	}
	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	if b := bodies[0]; b["max_completion_tokens"] != 7.0 || b["max_tokens"] != nil {
		t.Errorf("o3-mini: max_completion_tokens %v, max_tokens %v; want 7 and absent", b["max_completion_tokens"], b["max_tokens"])
	}
	if b := bodies[1]; b["max_tokens"] != 7.0 || b["max_completion_tokens"] != nil {
		t.Errorf("llama: max_tokens %v, max_completion_tokens %v; want 7 and absent", b["max_tokens"], b["max_completion_tokens"])
	}
}

func reasoningChunk(s string) string {
	return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"reasoning_content":%q},"finish_reason":null}]}`, s)
}

// usageDetailsChunk is a final usage chunk with completion_tokens_details.reasoning_tokens and
// prompt_tokens_details.cached_tokens (half the prompt, as a prefix cache would report it).
func usageDetailsChunk(prompt, completion, reasoning int) string {
	return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d},"completion_tokens_details":{"reasoning_tokens":%d}}}`,
		prompt, completion, prompt+completion, prompt/2, reasoning)
}
