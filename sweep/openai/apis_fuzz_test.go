package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
)

// checkEventDecoder feeds the data payloads of body (its "data:" lines, as sseBody.next
// returns them) to a fresh decoder of newDec until one fails or ends the stream, and checks
// what each result says: an error is a bad chunk or an API error; an answer carries its text,
// one JSON string that decodes; only the terminal type ends the stream, and nothing else
// does; a result reports no answer and reasoning at once.
func checkEventDecoder(t *testing.T, body []byte, newDec func() eventDecoder, terminal string) {
	dec := newDec()
	for _, line := range bytes.Split(body, []byte("\n")) {
		p, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
		if !ok {
			continue
		}
		p = bytes.TrimLeft(p, reSpace)
		checkScanEvent(t, p)
		r, err := dec.decode(p)
		if err != nil {
			var apiErr *goopenai.APIError
			if !errors.Is(err, errBadChunk) && !errors.As(err, &apiErr) {
				t.Fatalf("%q: error %v is neither a bad chunk nor an API error", p, err)
			}
			return
		}
		if r.answer && r.reasoning {
			t.Fatalf("%q: answer and reasoning at once", p)
		}
		if r.answer {
			var s string
			if r.replies != 1 || json.Unmarshal(r.reply, &s) != nil || s == "" {
				t.Fatalf("%q: answer with reply %q (%d)", p, r.reply, r.replies)
			}
		}
		if r.end {
			var v struct{ Type string }
			if json.Unmarshal(p, &v) != nil || (v.Type != terminal && v.Type != "response.incomplete") {
				t.Fatalf("%q: ended the stream, type %q", p, v.Type)
			}
			return
		}
	}
}

// FuzzResponsesEvents checks the Responses decoder on arbitrary streams (checkEventDecoder)
// and its scanner against encoding/json (checkScanEvent), seeded with the recorded streams of
// the API reference.
func FuzzResponsesEvents(f *testing.F) {
	for _, name := range []string{"responses_text.sse", "responses_reasoning.sse", "responses_incomplete.sse", "responses_failed.sse", "responses_error.sse"} {
		f.Add([]byte(readStream(f, name)))
	}
	f.Add([]byte(`data: {"type":"response.output_text.delta","delta":"x"}`))
	f.Add([]byte(`data: {"type":"error","code":429,"message":"slow down"}`))
	f.Add([]byte(`data: {"TYPE":"response.output_text.delta","delta":"\u00e9","Delta":"b"}`))
	f.Add([]byte(`data: {"type":"response.output_text.delta","delta":null}`))
	f.Add([]byte(`data: {"type":"response.function_call_arguments.delta","delta":"{\"a\""}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkEventDecoder(t, body, func() eventDecoder { return new(responsesDecoder) }, "response.completed")
	})
}

// FuzzMessagesEvents checks the Messages decoder on arbitrary streams (checkEventDecoder)
// and its scanner against encoding/json (checkScanEvent), seeded with the recorded streams of
// the API reference.
func FuzzMessagesEvents(f *testing.F) {
	for _, name := range []string{"messages_text.sse", "messages_thinking.sse", "messages_error.sse", "messages_cached.sse"} {
		f.Add([]byte(readStream(f, name)))
	}
	f.Add([]byte(strings.Repeat(`data: {"type":"message_start","message":{"usage":{"input_tokens":-1}}}`+"\n", 2)))
	f.Add([]byte(`data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}`))
	f.Add([]byte(`data: {"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"a"}}`))
	f.Add([]byte(`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","Thinking":"x","text":"y"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkEventDecoder(t, body, func() eventDecoder { return new(messagesDecoder) }, "message_stop")
	})
}

// checkScanEvent checks the decoders' scanners on payload p: whenever one takes it,
// encoding/json decodes it into the same event (its other fields unset).
func checkScanEvent(t *testing.T, p []byte) {
	var fast, slow responsesEvent
	if scanResponsesDelta(p, &fast) {
		err := json.Unmarshal(p, &slow)
		if err != nil || slow.Type != fast.Type || !sameText(slow.Delta, fast.Delta) || slow.Response != nil || slow.Code != nil || slow.Message != "" {
			t.Fatalf("%q: scanResponsesDelta %+v, encoding/json %+v (%v)", p, fast, slow, err)
		}
	}
	var mf, ms messagesEvent
	if scanMessagesDelta(p, &mf) {
		err := json.Unmarshal(p, &ms)
		if err != nil || ms.Type != mf.Type || ms.Delta.Type != mf.Delta.Type || !sameText(ms.Delta.Text, mf.Delta.Text) ||
			!sameText(ms.Delta.Thinking, mf.Delta.Thinking) || !sameText(ms.Delta.Partial, mf.Delta.Partial) || ms.Message != nil || ms.Usage != nil || ms.Error != nil {
			t.Fatalf("%q: scanMessagesDelta %+v, encoding/json %+v (%v)", p, mf, ms, err)
		}
	}
}

// sameText reports whether two decoded JSON strings are the same.
func sameText(a, b jsonText) bool { return a.set == b.set && bytes.Equal(a.raw, b.raw) }
