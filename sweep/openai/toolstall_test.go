package openai

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// toolStallGap is the stall_timeout of TestToolArgumentsHoldOffStall; toolStallParts the
// parts of a tool call's arguments its server streams after the answer's first token, one
// every toolStallGap/20, so the arguments stream for 3 stall_timeouts.
const (
	toolStallGap   = 100 * time.Millisecond
	toolStallParts = 60
)

// toolStream serves, for api, a stream of one answer token and then toolStallParts parts of
// a tool call's arguments, toolStallGap/20 apart, and the stream's end.
func toolStream(t *testing.T, api record.API) string {
	t.Helper()
	var head, tail []string
	var part string
	switch api {
	case record.APIChat:
		head = []string{contentChunk("a")}
		part = toolChunk(`x`)
		tail = []string{usageChunk(1, 2), "[DONE]"}
	case record.APIResponses:
		head = []string{`{"type":"response.created"}`, `{"type":"response.output_text.delta","delta":"a"}`}
		part = `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"x"}`
		tail = []string{`{"type":"response.completed","response":{"usage":{"input_tokens":1,"output_tokens":2}}}`}
	case record.APIMessages:
		head = []string{`{"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`}
		part = `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"x"}}`
		tail = []string{`{"type":"content_block_stop","index":1}`, `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":2}}`,
			`{"type":"message_stop"}`}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		for _, e := range head {
			s.data(e)
		}
		tk := time.NewTicker(toolStallGap / 20)
		defer tk.Stop()
		for range toolStallParts {
			select {
			case <-r.Context().Done():
				return
			case <-tk.C:
				s.data(part)
			}
		}
		for _, e := range tail {
			s.data(e)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestToolArgumentsHoldOffStall: after the answer's first token, a reply that streams a tool
// call's arguments (chat's delta.tool_calls, Responses' function_call_arguments deltas,
// Messages' input_json_delta) for longer than stall_timeout has not stalled: it ends ok, its
// content chunks the answer's token alone.
func TestToolArgumentsHoldOffStall(t *testing.T) {
	t.Parallel()
	for _, api := range []record.API{record.APIChat, record.APIResponses, record.APIMessages} {
		t.Run(string(api), func(t *testing.T) {
			t.Parallel()
			cl := newClient(t, toolStream(t, api), func(o *Options) { o.API, o.StallTimeout = api, toolStallGap })
			rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4})
			if rec.Status != record.StatusOK || len(rec.Chunks) != 1 {
				t.Errorf("%s %q (%s), %d chunks; want ok, 1 chunk", rec.Status, rec.ErrorClass, rec.Error, len(rec.Chunks))
			}
		})
	}
}

// TestToolPartsAreNoContent: a part of a tool call is progress, neither answer nor reasoning,
// in each API's decoder (BenchmarkDecodeChunk/tool: without allocating).
func TestToolPartsAreNoContent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		dec  func([]byte) (chunkResult, error)
		p    string
	}{
		{"chat", new(chunkDecoder).decode, toolChunk("x")},
		{"responses", func(b []byte) (chunkResult, error) {
			d := new(responsesDecoder)
			if _, err := d.decode([]byte(`{"type":"response.created"}`)); err != nil {
				return chunkResult{}, err
			}
			return d.decode(b)
		}, `{"type":"response.function_call_arguments.delta","delta":"x"}`},
		{"messages", func(b []byte) (chunkResult, error) {
			d := new(messagesDecoder)
			for _, e := range []string{`{"type":"message_start","message":{}}`, `{"type":"content_block_start","index":0}`} {
				if _, err := d.decode([]byte(e)); err != nil {
					return chunkResult{}, err
				}
			}
			return d.decode(b)
		}, `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"x"}}`},
	} {
		r, err := c.dec([]byte(c.p))
		if err != nil || !r.progress || r.content() {
			t.Errorf("%s: %+v (%v), want progress and no content", c.name, r, err)
		}

	}
}
