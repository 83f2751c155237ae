package openai

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// readStream reads a recorded stream of testdata/streams (see its README for the sources).
func readStream(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// serveBody answers every POST with 200 and the stream body, and GET /v1/models with one
// model, over loopback.
func serveBody(t testing.TB, body string) *httptest.Server {
	t.Helper()
	payload := []byte(body) // once: the benchmarks count every allocation
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}]}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(payload)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// streamWant is what a record of a recorded stream must say.
type streamWant struct {
	status              record.Status
	class               record.ErrorClass
	errText             string // a part of Error
	out, prompt         int
	source              record.TokensSource
	chunks, reasoning   int // content chunks (len(Chunks)) and those of reasoning only
	reasoningTokens     int
	cached              int // -1: none
	reply               string
	answerAfterThinking bool // TTFA set after TTFT
}

// checkStream runs one request of api with prompt tokens promptTokens against a server of
// body and checks the record against want.
func checkStream(t *testing.T, api record.API, body string, promptTokens int, want streamWant) {
	t.Helper()
	c := newClient(t, serveBody(t, body).URL, func(o *Options) { o.API = api })
	req := record.Request{Prompt: strings.Repeat("word ", promptTokens), PromptTokens: promptTokens, MaxTokens: 64, KeepReply: true}
	var rec record.Record
	c.Do(t.Context(), &req, &rec)
	if rec.Status != want.status || rec.ErrorClass != want.class || !strings.Contains(rec.Error, want.errText) {
		t.Fatalf("%s %q (%s), want %s %q naming %q", rec.Status, rec.ErrorClass, rec.Error, want.status, want.class, want.errText)
	}
	if want.status != record.StatusOK {
		return
	}
	cached := -1
	if rec.CachedTokens != nil {
		cached = *rec.CachedTokens
	}
	if rec.OutputTokens != want.out || rec.PromptTokens != want.prompt || rec.TokensSource != want.source ||
		len(rec.Chunks) != want.chunks || rec.ReasoningChunks != want.reasoning || rec.ReasoningTokens != want.reasoningTokens ||
		cached != want.cached || rec.TokensNote != "" {
		t.Errorf("out %d prompt %d (%s), chunks %d reasoning %d/%d tokens, cached %d, note %q; want %d %d (%s), %d %d/%d, %d",
			rec.OutputTokens, rec.PromptTokens, rec.TokensSource, len(rec.Chunks), rec.ReasoningChunks, rec.ReasoningTokens, cached, rec.TokensNote,
			want.out, want.prompt, want.source, want.chunks, want.reasoning, want.reasoningTokens, want.cached)
	}
	if req.Reply != want.reply {
		t.Errorf("reply %q, want %q", req.Reply, want.reply)
	}
	if want.answerAfterThinking != (rec.TTFA > 0) || (rec.TTFA > 0 && rec.TTFA < rec.TTFT) {
		t.Errorf("TTFT %v TTFA %v; want TTFA set: %v", rec.TTFT, rec.TTFA, want.answerAfterThinking)
	}
}

// TestRecordedStreams decodes the streams of the API references (testdata/streams/README.md)
// into records: the answer and reasoning deltas are the chunks, the terminal event's usage
// (Responses) or message_start's and message_delta's (Messages) the counts, and the error
// events errors classified as chat's (an HTTP status where the error names one, else
// stream_broken), naming the server's message.
func TestRecordedStreams(t *testing.T) {
	ok := record.StatusOK
	usage := record.TokensFromUsage
	for _, tc := range []struct {
		file   string
		api    record.API
		prompt int // the request's prompt tokens
		want   streamWant
	}{
		{"responses_text.sse", record.APIResponses, 37, streamWant{status: ok, out: 11, prompt: 37, source: usage, chunks: 3,
			cached: 0, reply: "Hi there! How can I assist you today?"}},
		{"responses_reasoning.sse", record.APIResponses, 8, streamWant{status: ok, out: 40, prompt: 8, source: usage, chunks: 3,
			reasoning: 2, reasoningTokens: 32, cached: 4, reply: "Hello! ¿Qué tal?", answerAfterThinking: true}},
		{"responses_incomplete.sse", record.APIResponses, 12, streamWant{status: ok, out: 2, prompt: 12, source: usage, chunks: 2,
			cached: 0, reply: "Once upon"}},
		{"responses_refusal.sse", record.APIResponses, 10, streamWant{status: ok, out: 9, prompt: 10, source: usage, chunks: 2,
			cached: 0, reply: "I'm sorry, I can't help with that."}},
		{"responses_failed.sse", record.APIResponses, 5, streamWant{status: record.StatusError, class: record.ErrHTTP5xx,
			errText: "response.failed: The model failed to generate a response."}},
		{"responses_error.sse", record.APIResponses, 5, streamWant{status: record.StatusError, class: record.ErrStreamBroken,
			errText: "Something went wrong"}},
		{"messages_text.sse", record.APIMessages, 25, streamWant{status: ok, out: 15, prompt: 25, source: usage, chunks: 2,
			cached: -1, reply: "Hello!"}},
		{"messages_thinking.sse", record.APIMessages, 20, streamWant{status: ok, out: 3, prompt: 20, source: record.TokensFromChunks,
			chunks: 3, reasoning: 2, cached: -1, reply: "27 * 453 = 12,231", answerAfterThinking: true}},
		{"messages_cached.sse", record.APIMessages, 121, streamWant{status: ok, out: 2, prompt: 121, source: usage, chunks: 2,
			cached: 100, reply: "The novel"}},
		{"messages_error.sse", record.APIMessages, 25, streamWant{status: record.StatusError, class: record.ErrHTTP5xx,
			errText: "overloaded_error: Overloaded"}},
	} {
		t.Run(tc.file, func(t *testing.T) { checkStream(t, tc.api, readStream(t, tc.file), tc.prompt, tc.want) })
	}
}

// TestEventAPIHostile: streams of the Responses and Messages APIs that break their rules are
// classified as chat's breaks are (hostile_test.go): an event cut mid-line at the body's end
// (no terminal event: stream_broken, as chat's stream without [DONE]), a payload that is not
// JSON or a delta out of order (before response.created or message_start, outside a content
// block: bad_chunk), a line over the cap (bad_chunk); an event after the terminal one is not
// read (as chat's after [DONE]), a [DONE] is accepted as the end, and event: lines, one per
// event, are not counted as non-data bytes (a cap below the stream's names). A stream that
// ends without content is empty, naming the terminal event it ended with.
func TestEventAPIHostile(t *testing.T) {
	resp, msgs := readStream(t, "responses_text.sse"), readStream(t, "messages_text.sse")
	incomplete := readStream(t, "responses_incomplete.sse")
	cut := func(s, at string) string { return s[:strings.Index(s, at)+len(at)] }
	drop := func(s, event string) string { // s without the event named event
		i := strings.Index(s, "event: "+event+"\n")
		j := i + strings.Index(s[i:], "\n\n") + 2
		return s[:i] + s[j:]
	}
	const msgDelta = "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"late\"}}\n\n"
	const respDelta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"late\"}\n\n"
	okResp := streamWant{status: record.StatusOK, out: 11, prompt: 37, source: record.TokensFromUsage, chunks: 3, cached: 0,
		reply: "Hi there! How can I assist you today?"}
	okMsgs := streamWant{status: record.StatusOK, out: 15, prompt: 25, source: record.TokensFromUsage, chunks: 2, cached: -1, reply: "Hello!"}
	broken := func(api record.API, what string) streamWant {
		return streamWant{status: record.StatusError, class: record.ErrStreamBroken, errText: "no " + what + " event"}
	}
	bad := func(text string) streamWant {
		return streamWant{status: record.StatusError, class: record.ErrBadChunk, errText: text}
	}
	for _, tc := range []struct {
		name, body string
		api        record.API
		prompt     int
		lineCap    int
		want       streamWant
	}{
		{"responses/cut mid-event", cut(resp, `"delta":" th`), record.APIResponses, 37, 0, broken(record.APIResponses, "response.completed")},
		{"messages/cut mid-event", cut(msgs, `"text": "He`), record.APIMessages, 25, 0, broken(record.APIMessages, "message_stop")},
		{"responses/cut after the last delta", cut(resp, "event: response.output_text.done\n"), record.APIResponses, 37, 0,
			broken(record.APIResponses, "response.completed")},
		{"responses/not JSON", strings.Replace(resp, `"delta":"Hi"}`, `"delta":"Hi"`, 1), record.APIResponses, 37, 0, bad("bad chunk")},
		{"messages/not JSON", strings.Replace(msgs, `"text": "Hello"}}`, `"text": "Hello"`, 1), record.APIMessages, 25, 0, bad("bad chunk")},
		{"responses/delta 42", strings.Replace(resp, `"delta":"Hi"`, `"delta":42`, 1), record.APIResponses, 37, 0,
			bad("field delta: a number, not a string")},
		{"messages/text 42", strings.Replace(msgs, `"text": "Hello"`, `"text": 42`, 1), record.APIMessages, 25, 0,
			bad("field delta.text: a number, not a string")},
		{"responses/reasoning delta 42", strings.Replace(resp, "event: response.output_text.delta",
			"event: response.reasoning_text.delta\ndata: {\"type\":\"response.reasoning_text.delta\",\"delta\":42}\n\nevent: response.output_text.delta", 1),
			record.APIResponses, 37, 0, bad("field delta: a number, not a string")},
		{"messages/thinking 42", strings.Replace(msgs, `"type": "text_delta", "text": "Hello"`, `"type": "thinking_delta", "thinking": 42`, 1),
			record.APIMessages, 25, 0, bad("field delta.thinking: a number, not a string")},
		// The key of a token's text, in an event of another type, may hold anything.
		{"responses/mcp arguments delta an object", strings.Replace(resp, "event: response.output_text.delta",
			"event: response.mcp_call_arguments.delta\ndata: {\"type\":\"response.mcp_call_arguments.delta\",\"delta\":{\"a\":1}}\n\nevent: response.output_text.delta", 1),
			record.APIResponses, 37, 0, okResp},
		{"messages/other delta's text an object", strings.Replace(msgs, "event: ping\n",
			"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"citations_delta\", \"text\": {\"a\": 1}, \"thinking\": [1]}}\n\nevent: ping\n", 1),
			record.APIMessages, 25, 0, okMsgs},
		{"responses/delta before response.created", drop(drop(resp, "response.created"), "response.in_progress"), record.APIResponses, 37, 0,
			bad("a delta before response.created")},
		{"messages/delta before message_start", drop(msgs, "message_start"), record.APIMessages, 25, 0, bad("an event before message_start")},
		{"messages/delta outside a block", strings.Replace(msgs, "event: message_delta", msgDelta+"event: message_delta", 1),
			record.APIMessages, 25, 0, bad("content_block_delta outside a content block")},
		{"messages/second message_start", strings.Replace(msgs, "event: ping", "event: message_start\ndata: {\"type\": \"message_start\"}\n\nevent: ping", 1),
			record.APIMessages, 25, 0, bad("a second message_start")},
		{"responses/huge event", strings.Replace(resp, `"delta":"Hi"`, `"delta":"`+strings.Repeat("x", 4096)+`"`, 1), record.APIResponses, 37, 2048,
			bad("stream line too long")},
		{"messages/huge event", strings.Replace(msgs, `"text": "Hello"`, `"text": "`+strings.Repeat("x", 4096)+`"`, 1), record.APIMessages, 25, 2048,
			bad("stream line too long")},
		{"responses/incomplete without content", drop(drop(incomplete, "response.output_text.delta"), "response.output_text.delta"), record.APIResponses, 12, 0,
			streamWant{status: record.StatusError, class: record.ErrEmpty, errText: "ended with response.incomplete but no content"}},
		{"responses/completed without content", drop(drop(drop(resp, "response.output_text.delta"), "response.output_text.delta"), "response.output_text.delta"),
			record.APIResponses, 37, 0, streamWant{status: record.StatusError, class: record.ErrEmpty, errText: "ended with response.completed but no content"}},
		{"responses/delta after response.completed", resp + respDelta, record.APIResponses, 37, 0, okResp},
		{"messages/delta after message_stop", msgs + msgDelta, record.APIMessages, 25, 0, okMsgs},
		{"responses/[DONE] after response.completed", resp + "data: [DONE]\n\n", record.APIResponses, 37, 0, okResp},
		{"messages/[DONE] after message_stop", msgs + "data: [DONE]\n\n", record.APIMessages, 25, 0, okMsgs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, serveBody(t, tc.body).URL, func(o *Options) {
				o.API = tc.api
				if tc.lineCap > 0 {
					o.MaxLineBytes = tc.lineCap
				}
			})
			req := record.Request{Prompt: strings.Repeat("word ", tc.prompt), PromptTokens: tc.prompt, MaxTokens: 64, KeepReply: true}
			var rec record.Record
			c.Do(t.Context(), &req, &rec)
			w := tc.want
			if rec.Status != w.status || rec.ErrorClass != w.class || !strings.Contains(rec.Error, w.errText) {
				t.Fatalf("%s %q (%s), want %s %q naming %q", rec.Status, rec.ErrorClass, rec.Error, w.status, w.class, w.errText)
			}
			if w.status == record.StatusOK && (rec.OutputTokens != w.out || len(rec.Chunks) != w.chunks || req.Reply != w.reply) {
				t.Errorf("out %d chunks %d reply %q; want %d %d %q", rec.OutputTokens, len(rec.Chunks), req.Reply, w.out, w.chunks, w.reply)
			}
		})
	}
}

// TestEventLines: one event: line before each data line is the event's name: a stream of
// 500 named events passes a non-data cap of 256 bytes, below its names' bytes; of two event:
// lines in a row the second is non-data, its bytes counted, so that names without data
// cannot flood the stream.
func TestEventLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
	for range 500 {
		b.WriteString("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n")
	}
	b.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n")
	named := b.String()
	for _, tc := range []struct {
		name, body string
		class      record.ErrorClass
	}{
		{"one name an event", named, ""},
		{"two names in a row, once", strings.Replace(named, "event: response.completed\n", "event: x\nevent: response.completed\n", 1), ""},
		{"names without data", strings.Replace(named, "event: response.completed\n", strings.Repeat("event: x\nevent: y\n", 64)+"event: response.completed\n", 1),
			record.ErrBadChunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, serveBody(t, tc.body).URL, func(o *Options) { o.API, o.MaxNonDataBytes = record.APIResponses, 256 })
			rec := do(t, c, record.Request{Prompt: "p", PromptTokens: 1})
			if rec.ErrorClass != tc.class || (tc.class == "" && len(rec.Chunks) != 500) {
				t.Fatalf("%s %q (%s), %d chunks; want class %q", rec.Status, rec.ErrorClass, rec.Error, len(rec.Chunks), tc.class)
			}
		})
	}
}

// TestMessagesKeyScrubbed: a server that echoes the x-api-key it got in its error (Anthropic's
// envelope, 401) is classified http_4xx with its message, the key scrubbed from it.
func TestMessagesKeyScrubbed(t *testing.T) {
	const key = "sk-ant-secret-123"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + r.Header.Get("X-Api-Key") + `"}}`))
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, func(o *Options) { o.API, o.APIKey = record.APIMessages, key })
	rec := do(t, c, record.Request{Prompt: "p", PromptTokens: 1})
	if rec.ErrorClass != record.ErrHTTP4xx || !strings.Contains(rec.Error, "invalid x-api-key") || strings.Contains(rec.Error, key) {
		t.Fatalf("%s %q: %s", rec.Status, rec.ErrorClass, rec.Error)
	}
}
