package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestErrorEventThenOpenStream: a server sends an in-stream error event and keeps the
// connection open. The error line ends the request at once (go-openai's reader read one line
// past it first, and a reader that waited for that line would wait until the timeout).
func TestErrorEventThenOpenStream(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(contentChunk("a"))
		s.data(`{"error":{"message":"boom","type":"server_error","code":500}}`)
		select { // hold the stream open
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	const timeout = 20 * time.Second
	c := newClient(t, srv.URL, func(o *Options) { o.RequestTimeout = timeout })
	rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4})
	if rec.Status != record.StatusError || rec.ErrorClass == record.ErrTimeout || !strings.Contains(rec.Error, "boom") {
		t.Fatalf("record %s/%s %q: want the in-stream error, not a timeout", rec.Status, rec.ErrorClass, rec.Error)
	}
	if rec.E2E >= timeout/2 {
		t.Fatalf("E2E %v: the error waited for the open stream", rec.E2E)
	}
}

// TestIgnoreEOSFastPath checks the request body written without ExtraBody: valid JSON with
// go-openai's fields, "ignore_eos": true and "min_tokens" = max_tokens, each once.
func TestIgnoreEOSFastPath(t *testing.T) {
	bodies := make(chan []byte, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		bodies <- b
		s := newSSE(w)
		s.data(contentChunk("x"))
		s.data("[DONE]")
	}))
	defer srv.Close()
	for _, api := range []record.API{record.APIChat, record.APICompletions} {
		c := newClient(t, srv.URL, func(o *Options) { o.API = api })
		rec := do(t, c, record.Request{Prompt: "one two", PromptTokens: 2, MaxTokens: 16, IgnoreEOS: true})
		if rec.Status != record.StatusOK {
			t.Fatalf("%s: %s %s", api, rec.Status, rec.Error)
		}
		b := <-bodies
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: body %q: %v", api, b, err)
		}
		if m["ignore_eos"] != true || m["min_tokens"] != 16.0 || m["max_tokens"] != 16.0 || m["stream"] != true || m["model"] != "m" {
			t.Errorf("%s: body %s", api, b)
		}
		for _, k := range []string{`"ignore_eos"`, `"min_tokens"`} {
			if n := bytes.Count(b, []byte(k)); n != 1 {
				t.Errorf("%s: %s appears %d times in %s", api, k, n, b)
			}
		}
	}
}

func TestAppendIgnoreEOS(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`{"a":1}`, `{"a":1,"ignore_eos":true,"min_tokens":7}`, true},
		{"{\"a\":1}\n", `{"a":1,"ignore_eos":true,"min_tokens":7}`, true},
		{`{}`, `{}`, false},
		{`{ }`, `{ }`, false},
		{`[1]`, `[1]`, false},
		{`{"ignore_eos":false}`, `{"ignore_eos":false}`, false},
		{`{"min_tokens":1}`, `{"min_tokens":1}`, false},
	}
	for _, tt := range tests {
		out, ok := appendIgnoreEOS([]byte(tt.in), 7)
		if string(out) != tt.want || ok != tt.ok {
			t.Errorf("appendIgnoreEOS(%q) = %q, %v; want %q, %v", tt.in, out, ok, tt.want, tt.ok)
		}
		if ok && !json.Valid(out) {
			t.Errorf("appendIgnoreEOS(%q) = %q: invalid JSON", tt.in, out)
		}
	}
}
