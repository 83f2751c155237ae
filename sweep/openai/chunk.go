package openai

import (
	"bytes"
	"encoding/json"

	goopenai "github.com/sashabaranov/go-openai"
)

// nonEmpty records whether a JSON string field was present and non-empty, without
// allocating the string.
type nonEmpty bool

// UnmarshalJSON implements json.Unmarshaler: true for any string other than "", false for
// null; any other value is an error (notString).
func (p *nonEmpty) UnmarshalJSON(b []byte) error {
	*p = len(b) > 2 && b[0] == '"'
	return notString(b)
}

// isError records whether a JSON string field equals "error".
type isError bool

// UnmarshalJSON implements json.Unmarshaler.
func (p *isError) UnmarshalJSON(b []byte) error {
	*p = string(b) == `"error"`
	return nil
}

// wireChunk is the subset of a chat.completion.chunk or text_completion stream event the
// adapter needs; everything else is skipped by the decoder.
type wireChunk struct {
	Object  isError         `json:"object"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Text  nonEmpty `json:"text"`
	Delta struct {
		Content          nonEmpty  `json:"content"`
		ReasoningContent nonEmpty  `json:"reasoning_content"`
		Reasoning        nonEmpty  `json:"reasoning"`
		ToolCalls        toolDelta `json:"tool_calls"`
		FunctionCall     toolDelta `json:"function_call"`
	} `json:"delta"`
}

// toolDelta records whether a chat delta's tool_calls (or the older function_call) carries a
// part of a tool call (toolProgress); it takes any value, like a key the adapter skips.
type toolDelta bool

// UnmarshalJSON implements json.Unmarshaler.
func (p *toolDelta) UnmarshalJSON(b []byte) error {
	*p = toolDelta(toolProgress(b))
	return nil
}

// toolProgress reports whether v, the raw value of a chat delta's tool_calls or
// function_call, carries a part of a tool call: any value but null and an empty array. Both
// decoders read the raw value with it, so they agree (FuzzScanChunk).
func toolProgress(v []byte) bool {
	return len(v) > 0 && v[0] != 'n' && string(v) != "[]"
}

type wireUsage struct {
	PromptTokens            optCount          `json:"prompt_tokens"`
	CompletionTokens        optCount          `json:"completion_tokens"`
	CompletionTokensDetails wireDetails       `json:"completion_tokens_details"`
	PromptTokensDetails     wirePromptDetails `json:"prompt_tokens_details"`
}

// optCount is a token count of the usage object and whether the event set it: encoding/json
// leaves it unset on null, like an int field, and fails on anything but an integer.
type optCount struct {
	n   int
	set bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *optCount) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*c = optCount{n: n, set: true}
	return nil
}

// wireDetails is usage.completion_tokens_details, read leniently: it only informs the
// record's reasoning tokens, so a value of another shape leaves them unknown rather than
// failing the request.
type wireDetails struct{ reasoning optCount }

// UnmarshalJSON implements json.Unmarshaler.
func (d *wireDetails) UnmarshalJSON(b []byte) error {
	var v struct {
		ReasoningTokens optCount `json:"reasoning_tokens"`
	}
	if json.Unmarshal(b, &v) == nil {
		d.reasoning = v.ReasoningTokens
	}
	return nil
}

// wirePromptDetails is usage.prompt_tokens_details, read leniently like wireDetails: its
// cached_tokens (the prompt tokens the server's prefix cache had: OpenAI, vLLM with
// --enable-prompt-tokens-details, SGLang) only inform the record.
type wirePromptDetails struct{ cached optCount }

// UnmarshalJSON implements json.Unmarshaler.
func (d *wirePromptDetails) UnmarshalJSON(b []byte) error {
	var v struct {
		CachedTokens optCount `json:"cached_tokens"`
	}
	if json.Unmarshal(b, &v) == nil {
		d.cached = v.CachedTokens
	}
	return nil
}

// usageCounts are the token counts of one event's usage object; a count the event does not
// carry (no usage, a null count) is not set.
type usageCounts struct {
	completion, prompt, reasoning, cached optCount
}

// chunkResult is what one stream event says.
type chunkResult struct {
	// answer reports a choice with non-empty answer content: delta.content, or text of a
	// completions stream.
	answer bool
	// reasoning reports a choice with non-empty reasoning content: delta.reasoning_content,
	// or delta.reasoning as newer vLLM names it.
	reasoning bool
	// progress reports a part of a tool call: a chat delta's tool_calls or function_call, a
	// Responses function_call_arguments delta, a Messages input_json_delta. It is no content
	// (no TTFT, no answer to the budget) but holds off stall_timeout: a reply may stream a
	// tool's arguments for long after its first token (watch.event).
	progress bool
	// usage holds usage.completion_tokens, prompt_tokens,
	// completion_tokens_details.reasoning_tokens and prompt_tokens_details.cached_tokens, each
	// when the event sets it.
	usage usageCounts
	// reply is the answer content as the scanner found it, a JSON string with its quotes,
	// when replies is 1; replies counts the event's non-empty answer strings (scanChunk only:
	// 0 from decodeSlow, whose events appendReply decodes whole).
	reply   []byte
	replies int
	// end reports the stream's terminal event (an eventDecoder's: response.completed,
	// message_stop); chat's stream ends at [DONE] instead.
	end bool
}

// content reports a content chunk: one with answer or reasoning content (TTFT, DESIGN §1).
func (r *chunkResult) content() bool { return r.answer || r.reasoning }

// chunkDecoder decodes stream events, reusing its buffers across events of one stream.
type chunkDecoder struct {
	c     wireChunk
	usage wireUsage
}

// decode decodes one "data:" payload. An event that is not JSON, or that carries an error
// object, is an error (errBadChunk or an *goopenai.APIError).
//
// The per-chunk path: decode first tries scanChunk, an allocation-free scanner that handles
// the shapes servers send and validates the whole payload as strictly as encoding/json. On
// anything it does not handle exactly like encoding/json (invalid JSON, a key with escapes
// or non-ASCII bytes, a value of an unexpected type, an error event) it declines and the
// reflective decoder below decides, so both paths give the same result (FuzzScanChunk).
func (d *chunkDecoder) decode(line []byte) (chunkResult, error) {
	if r, ok := scanChunk(line); ok {
		return r, nil
	}
	return d.decodeSlow(line)
}

// decodeSlow decodes one payload with encoding/json.
func (d *chunkDecoder) decodeSlow(line []byte) (chunkResult, error) {
	ch := d.c.Choices[:cap(d.c.Choices)]
	clear(ch)
	d.c = wireChunk{Choices: ch[:0]}
	d.usage = wireUsage{}
	d.c.Usage = &d.usage
	if err := json.Unmarshal(line, &d.c); err != nil {
		return chunkResult{}, badChunk(err, line)
	}
	if bool(d.c.Object) || (len(d.c.Error) > 0 && !bytes.Equal(d.c.Error, []byte("null"))) {
		return chunkResult{}, streamError(line, d.c.Error)
	}
	var r chunkResult
	if u := d.c.Usage; u != nil {
		r.usage = usageCounts{completion: u.CompletionTokens, prompt: u.PromptTokens, reasoning: u.CompletionTokensDetails.reasoning,
			cached: u.PromptTokensDetails.cached}
	}
	for i := range d.c.Choices {
		c := &d.c.Choices[i]
		r.answer = r.answer || bool(c.Text) || bool(c.Delta.Content)
		r.reasoning = r.reasoning || bool(c.Delta.ReasoningContent) || bool(c.Delta.Reasoning)
		r.progress = r.progress || bool(c.Delta.ToolCalls) || bool(c.Delta.FunctionCall)
	}
	return r, nil
}

// streamError builds the APIError of an in-stream error event: {"error": {...}} or a
// top-level {"object": "error", "message": ..., "code": ...} (older vLLM).
func streamError(line, inner []byte) error {
	src := line
	if len(inner) > 0 && inner[0] == '{' {
		src = inner
	}
	e := &goopenai.APIError{}
	if err := json.Unmarshal(src, e); err != nil || e.Message == "" {
		if len(inner) > 0 && inner[0] == '"' {
			var s string
			if json.Unmarshal(inner, &s) == nil {
				return &goopenai.APIError{Message: s}
			}
		}
		return &goopenai.APIError{Message: string(truncate(line, 200))}
	}
	return e
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
