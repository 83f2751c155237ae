package openai

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// TestNotAStream: a 2xx answer to a stream request that is no event stream, or a chunk whose
// text field is not a string, is a bad_chunk that says why (before: `"content": 42` was
// classed empty, and a gzip body or one JSON completion ended "stream ended without data:
// [DONE]"). Every request asks for identity. A plain event stream without [DONE] keeps its
// message.
func TestNotAStream(t *testing.T) {
	t.Parallel()
	sse := func(lines ...string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString("data: " + l + "\n\n")
		}
		return b.String()
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, sse(roleChunk(), contentChunk("hi"), usageChunk(1, 1), "[DONE]"))
	zw.Close()
	completion := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":6,"completion_tokens":1}}`
	for _, tc := range []struct {
		name, ctype, enc, body string
		class                  record.ErrorClass
		want                   string
	}{
		{"content 42", "text/event-stream", "", sse(roleChunk(), `{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":42}}]}`, "[DONE]"),
			record.ErrBadChunk, "field choices.delta.content: a number, not a string"},
		{"reasoning object", "text/event-stream", "", sse(`{"choices":[{"delta":{"reasoning_content":{"a":1}}}]}`, "[DONE]"),
			record.ErrBadChunk, "field choices.delta.reasoning_content: an object, not a string"},
		{"completions text array", "text/event-stream", "", sse(`{"choices":[{"text":["a"]}]}`, "[DONE]"),
			record.ErrBadChunk, "field choices.text: an array, not a string"},
		{"gzip", "text/event-stream", "gzip", zipped.String(),
			record.ErrBadChunk, "the server sent gzip-compressed bytes (Content-Encoding); kneecap asks for identity"},
		{"one JSON body", "application/json", "", completion,
			record.ErrBadChunk, "the server answered with one JSON body (Content-Type application/json), not a stream: does it support stream=true?"},
		{"pretty JSON labelled a stream", "text/event-stream", "", "{\n  \"id\": \"x\",\n  \"choices\": []\n}\n",
			record.ErrBadChunk, "one JSON body (Content-Type text/event-stream), not a stream"},
		{"an HTML page", "text/html; charset=utf-8", "", "<html><body>Sign in</body></html>\n",
			record.ErrBadChunk, "a body of Content-Type text/html, not text/event-stream, and no data line"},
		// Bodies the limits on non-data lines end before their end: 400 lines of JSON (over
		// sseEmptyLimit), a page of 6 lines over MaxNonDataBytes (1 MiB by default).
		{"a long JSON body", "application/json", "", "{\n" + strings.Repeat("  \"k\": 1,\n", 400) + "  \"z\": 1\n}\n",
			record.ErrBadChunk, "the server answered with one JSON body (Content-Type application/json), not a stream"},
		{"a long HTML page", "text/html", "", "<html><body>\n" + strings.Repeat("<p>"+strings.Repeat("x", 200_000)+"</p>\n", 6) + "</body></html>\n",
			record.ErrBadChunk, "a body of Content-Type text/html, not text/event-stream, and no data line"},
		{"stream without DONE", "text/event-stream", "", sse(roleChunk(), contentChunk("hi")),
			record.ErrStreamBroken, "openai: stream: openai: stream ended without data: [DONE]"},
		{"null content", "text/event-stream", "", sse(`{"choices":[{"delta":{"content":null}}]}`, "[DONE]"),
			record.ErrEmpty, "but no content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked = r.Header.Get("Accept-Encoding")
				w.Header().Set("Content-Type", tc.ctype)
				if tc.enc != "" {
					w.Header().Set("Content-Encoding", tc.enc)
				}
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, nil)
			var rec record.Record
			c.Do(context.Background(), &record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4}, &rec)
			if rec.ErrorClass != tc.class || !strings.Contains(rec.Error, tc.want) {
				t.Errorf("%s %q, want %s with %q", rec.ErrorClass, rec.Error, tc.class, tc.want)
			}
			if asked != "identity" {
				t.Errorf("Accept-Encoding %q, want identity", asked)
			}
		})
	}
}
