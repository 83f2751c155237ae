package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/sweep"
)

// TestSSEBodyDropsSeparators checks which blank lines the guard drops, over every read size:
// the first one after a data line, "\n" or "\r\n", and nothing else. A "\r\n" separator split
// across reads may pass.
func TestSSEBodyDropsSeparators(t *testing.T) {
	tests := []struct {
		name, in, want string
		crlf           bool // a "\r\n" separator split across reads may pass
	}{
		{name: "events", in: "data: a\n\ndata: b\n\ndata: [DONE]\n\n", want: "data: a\ndata: b\ndata: [DONE]\n"},
		{name: "crlf", in: "data: a\r\n\r\ndata: [DONE]\r\n\r\n", want: "data: a\r\ndata: [DONE]\r\n", crlf: true},
		// Only the first blank line of a run: go-openai still counts the others.
		{name: "run", in: "data: a\n\n\n\ndata: b\n", want: "data: a\n\n\ndata: b\n"},
		// Comments and event fields keep their separators.
		{name: "comment", in: ": ping\n\nevent: x\n\ndata: a\n\n", want: ": ping\n\nevent: x\n\ndata: a\n"},
		// go-openai reads one line past an error line before it returns the error.
		{name: "error", in: "data: {\"error\":{\"message\":\"boom\"}}\n\n", want: "data: {\"error\":{\"message\":\"boom\"}}\n\n"},
		{name: "error spaced", in: "data:\t {\"error\":1}\n\n", want: "data:\t {\"error\":1}\n\n"},
		{name: "error undecidable", in: "data:" + strings.Repeat(" ", 40) + "{\"error\":1}\n\n",
			want: "data:" + strings.Repeat(" ", 40) + "{\"error\":1}\n\n"},
		{name: "not error", in: "data: {\"errors\":1}\n\ndata: {\"err\"}\n\n", want: "data: {\"errors\":1}\ndata: {\"err\"}\n"},
		{name: "short data", in: "data: {\"e\n\n", want: "data: {\"e\n"},
		{name: "no trailing newline", in: "data: a\n\ndata: b", want: "data: a\ndata: b"},
	}
	for _, tt := range tests {
		for step := 1; step <= len(tt.in); step++ {
			b := &sseBody{rc: io.NopCloser(&oneByteReader{s: tt.in, n: step}), maxLine: 1 << 10, maxNonData: 1 << 10}
			got, err := io.ReadAll(b)
			if err != nil {
				t.Fatalf("%s step %d: %v", tt.name, step, err)
			}
			checkDropped(t, []byte(tt.in), got, true)
			if string(got) != tt.want && (!tt.crlf || step == len(tt.in)) {
				t.Errorf("%s step %d: got %q, want %q", tt.name, step, got, tt.want)
			}
		}
	}
}

// TestSSEBodyKeepsReading checks that a read of nothing but a dropped separator does not
// surface as a (0, nil) read, which bufio counts as no progress.
func TestSSEBodyKeepsReading(t *testing.T) {
	// Reads of 1 byte: the separator arrives alone.
	b := &sseBody{rc: io.NopCloser(&oneByteReader{s: strings.Repeat("data: a\n\n", 200), n: 1}), maxLine: 64, maxNonData: 64}
	br := bufio.NewReaderSize(b, 16)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d lines: %v", n, err)
		}
		if string(line) != "data: a\n" {
			t.Fatalf("line %d: %q", n, line)
		}
		n++
	}
	if n != 200 {
		t.Fatalf("%d lines, want 200", n)
	}
}

// TestErrorEventThenOpenStream checks the case the separator rule protects: a server sends an
// in-stream error event and keeps the connection open. go-openai reads the separator after
// the error line and returns the error; had the guard dropped it, the request would wait for
// the server until its timeout.
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
	rec := do(t, c, sweep.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4})
	if rec.Status != sweep.StatusError || rec.ErrorClass == sweep.ErrTimeout || !strings.Contains(rec.Error, "boom") {
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
	for _, api := range []sweep.API{sweep.APIChat, sweep.APICompletions} {
		c := newClient(t, srv.URL, func(o *Options) { o.API = api })
		rec := do(t, c, sweep.Request{Prompt: "one two", PromptTokens: 2, MaxTokens: 16, IgnoreEOS: true})
		if rec.Status != sweep.StatusOK {
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
