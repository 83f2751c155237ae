package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
)

// responsesProtocol is the OpenAI Responses API, POST /responses with stream true
// (https://platform.openai.com/docs/api-reference/responses-streaming; DESIGN §3.11).
type responsesProtocol struct{}

// responsesRequest is the body of a Responses request. Input is the prompt, or the
// conversation as messages when the request has a history. store is false: a load test has
// no use for the server keeping each response (vLLM keeps them in memory by default).
// IgnoreEOS is vLLM's ResponsesRequest.ignore_eos, which has no min_tokens: with max_output_tokens
// it forces the output's length as chat's ignore_eos and min_tokens do.
type responsesRequest struct {
	Model           string `json:"model"`
	Input           any    `json:"input"`
	MaxOutputTokens int    `json:"max_output_tokens,omitempty"`
	Stream          bool   `json:"stream"`
	Store           bool   `json:"store"`
	IgnoreEOS       bool   `json:"ignore_eos,omitempty"`
}

func (responsesProtocol) open(ctx context.Context, c *Client, req *record.Request) (io.Closer, error) {
	body := responsesRequest{Model: c.model(req), Input: req.Prompt, MaxOutputTokens: max(req.MaxTokens, 0), Stream: true,
		IgnoreEOS: req.IgnoreEOS}
	if len(req.History) > 0 {
		body.Input = turns(req)
	}
	return c.postStream(ctx, "/responses", body)
}

func (responsesProtocol) events() eventDecoder  { return new(responsesDecoder) }
func (responsesProtocol) mergesIgnoreEOS() bool { return false }
func (responsesProtocol) terminal() string      { return "response.completed" }

// responsesType is a Responses event's type, among those the decoder acts on; every other
// type (response.created, response.output_item.added, …) is respOther. Decoding it
// allocates nothing.
type responsesType uint8

const (
	respOther responsesType = iota
	respCreated
	respTextDelta
	respReasoningDelta
	respToolDelta
	respCompleted
	respIncomplete
	respFailed
	respError
)

// UnmarshalJSON implements json.Unmarshaler.
func (t *responsesType) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"response.created"`, `"response.in_progress"`:
		*t = respCreated
	case `"response.output_text.delta"`, `"response.refusal.delta"`:
		*t = respTextDelta
	case `"response.reasoning_text.delta"`, `"response.reasoning_summary_text.delta"`:
		*t = respReasoningDelta
	case `"response.function_call_arguments.delta"`, `"response.custom_tool_call_input.delta"`:
		*t = respToolDelta
	case `"response.completed"`:
		*t = respCompleted
	case `"response.incomplete"`:
		*t = respIncomplete
	case `"response.failed"`:
		*t = respFailed
	case `"error"`:
		*t = respError
	default:
		*t = respOther
	}
	return nil
}

// responsesEvent is the subset of a Responses stream event the decoder reads.
type responsesEvent struct {
	Type     responsesType `json:"type"`
	Delta    jsonText      `json:"delta"`
	Response *struct {
		Usage *struct {
			InputTokens         optCount `json:"input_tokens"`
			OutputTokens        optCount `json:"output_tokens"`
			OutputTokensDetails struct {
				ReasoningTokens optCount `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
			InputTokensDetails struct {
				CachedTokens optCount `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	} `json:"response"`
	// An error event's own fields.
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// jsonText is a JSON text field's value kept as it was sent (valid until the next payload):
// raw is a string with its quotes, for keepReply, or a value of another type; set reports a
// non-empty string. Only the events whose text is a token (a Responses text or reasoning
// delta, a Messages text_delta or thinking_delta) require a string (stringField): the same key
// of another event (response.mcp_call_arguments.delta: {"a": 1}) may hold anything.
type jsonText struct {
	raw []byte
	set bool
}

// UnmarshalJSON implements json.Unmarshaler: the bytes are the payload's, not a copy; null
// leaves s empty. It never fails: a value neither a string nor null is kept in raw, for
// stringField to refuse where a string is required.
func (s *jsonText) UnmarshalJSON(b []byte) error {
	*s = jsonText{}
	if string(b) != "null" && !(len(b) == 2 && b[0] == '"') {
		*s = jsonText{raw: b, set: len(b) > 2 && b[0] == '"'}
	}
	return nil
}

// stringField returns nil when s is a string or null, else the bad chunk of payload naming
// field ("field delta: a number, not a string").
func (s jsonText) stringField(field string, payload []byte) error {
	err := notString(s.raw)
	if err == nil {
		return nil
	}
	err.(*json.UnmarshalTypeError).Field = field
	return badChunk(err, payload)
}

// responsesDecoder decodes a Responses stream's events (DESIGN §3.11), the deltas without
// allocating (scanResponsesDelta), the others with encoding/json: output_text and refusal
// deltas are answer chunks (a refusal is the model's answer), reasoning_text and
// reasoning_summary_text deltas reasoning chunks; the usage
// of response.completed (or response.incomplete, a response cut at max_output_tokens) is the
// stream's and ends it; response.failed and error are errors. A delta before response.created
// is a bad chunk.
type responsesDecoder struct {
	started bool
	// terminal names the terminal event seen (response.completed or response.incomplete);
	// "" before it.
	terminal string
	ev       responsesEvent // the event decoded last, reused: it escapes to encoding/json
}

// terminalSeen names the terminal event the stream ended with (terminalNamer).
func (d *responsesDecoder) terminalSeen() string { return d.terminal }

func (d *responsesDecoder) decode(payload []byte) (chunkResult, error) {
	ev := &d.ev
	if err := decodeEvent(payload, ev, scanResponsesDelta); err != nil {
		return chunkResult{}, err
	}
	var r chunkResult
	switch ev.Type {
	case respCreated:
		d.started = true
	case respTextDelta, respReasoningDelta:
		if !d.started {
			return r, fmt.Errorf("%w: a delta before response.created: %q", errBadChunk, truncate(payload, 120))
		}
		if err := ev.Delta.stringField("delta", payload); err != nil {
			return r, err
		}
		if ev.Type == respTextDelta {
			r.answer = ev.Delta.set
			if r.answer {
				r.reply, r.replies = ev.Delta.raw, 1
			}
		} else {
			r.reasoning = ev.Delta.set
		}
	case respToolDelta:
		r.progress = ev.Delta.set // a part of a tool call's arguments: progress, no token
	case respCompleted, respIncomplete:
		r.end = true
		d.terminal = "response.completed"
		if ev.Type == respIncomplete {
			d.terminal = "response.incomplete"
		}
		if ev.Response != nil && ev.Response.Usage != nil {
			u := ev.Response.Usage
			r.usage = usageCounts{completion: u.OutputTokens, prompt: u.InputTokens,
				reasoning: u.OutputTokensDetails.ReasoningTokens, cached: u.InputTokensDetails.CachedTokens}
		}
	case respFailed:
		var inner []byte
		if ev.Response != nil {
			inner = ev.Response.Error
		}
		return r, responsesError(payload, inner, "response.failed")
	case respError:
		e := &goopenai.APIError{Message: ev.Message, Code: codeValue(ev.Code)}
		if e.Message == "" {
			e.Message = "error event: " + string(truncate(payload, 200))
		}
		return r, e
	}
	return r, nil
}

// responsesError is the APIError of a response.failed event: its response.error {code,
// message}, the code an HTTP status where OpenAI's names one (classify).
func responsesError(payload, inner []byte, what string) error {
	var e struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	if len(inner) == 0 || json.Unmarshal(inner, &e) != nil || e.Message == "" {
		return &goopenai.APIError{Message: what + ": " + string(truncate(payload, 200))}
	}
	return &goopenai.APIError{Message: what + ": " + e.Message, Code: codeValue(e.Code)}
}

// codeValue is an error code as APIError keeps it: an HTTP status where the server's code
// names one (OpenAI's server_error, rate_limit_exceeded; a number), else the code's text.
func codeValue(raw json.RawMessage) any {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n int
		if json.Unmarshal(raw, &n) == nil {
			return n
		}
		return nil
	}
	if n, ok := errorTypeStatus[s]; ok {
		return n
	}
	return s
}

// errorTypeStatus maps the error codes and types the APIs send in a stream to the HTTP status
// they stand for: OpenAI's Responses codes, Anthropic's error types
// (https://docs.anthropic.com/en/api/errors) and vLLM's internal_error.
var errorTypeStatus = map[string]int{
	"server_error":          500,
	"rate_limit_exceeded":   429,
	"invalid_request_error": 400,
	"authentication_error":  401,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"internal_error":        500,
	"overloaded_error":      529,
}
