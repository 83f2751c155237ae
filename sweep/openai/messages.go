package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
)

// anthropicVersion is the anthropic-version header the Messages API is sent with, unless
// Options.Header names one.
const anthropicVersion = "2023-06-01"

// defaultMessagesMaxTokens is the max_tokens of a Messages request whose workload sets none:
// the API requires one.
const defaultMessagesMaxTokens = 4096

// messagesProtocol is the Anthropic Messages API, POST /messages with stream true
// (https://docs.anthropic.com/en/api/messages-streaming; DESIGN §3.11). Its key goes in
// x-api-key with anthropic-version (Options.Header, set by New), not as a bearer token.
type messagesProtocol struct{}

// messagesRequest is the body of a Messages request. Neither Anthropic nor vLLM's
// /v1/messages (AnthropicMessagesRequest) has ignore_eos or min_tokens: the output's length
// is not forced (the analysis says so, config.AnalysisOptions).
type messagesRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Messages  []turn `json:"messages"`
	Stream    bool   `json:"stream"`
}

func (messagesProtocol) open(ctx context.Context, c *Client, req *record.Request) (io.Closer, error) {
	n := req.MaxTokens
	if n <= 0 {
		n = defaultMessagesMaxTokens
	}
	// The key is Options.Header's x-api-key (messagesHeader), not a bearer token.
	return c.postStream(ctx, "/messages", messagesRequest{Model: c.model(req), MaxTokens: n, Messages: turns(req), Stream: true})
}

func (messagesProtocol) events() eventDecoder  { return new(messagesDecoder) }
func (messagesProtocol) mergesIgnoreEOS() bool { return false }
func (messagesProtocol) terminal() string      { return "message_stop" }

// messagesType is a Messages event's type; an unknown one (a future event type, which
// Anthropic's versioning policy allows) is msgOther and ignored.
type messagesType uint8

const (
	msgOther messagesType = iota
	msgStart
	msgBlockStart
	msgBlockDelta
	msgBlockStop
	msgDelta
	msgStop
	msgPing
	msgError
)

// UnmarshalJSON implements json.Unmarshaler.
func (t *messagesType) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"message_start"`:
		*t = msgStart
	case `"content_block_start"`:
		*t = msgBlockStart
	case `"content_block_delta"`:
		*t = msgBlockDelta
	case `"content_block_stop"`:
		*t = msgBlockStop
	case `"message_delta"`:
		*t = msgDelta
	case `"message_stop"`:
		*t = msgStop
	case `"ping"`:
		*t = msgPing
	case `"error"`:
		*t = msgError
	default:
		*t = msgOther
	}
	return nil
}

// messagesUsage is a Messages usage object: input_tokens excludes the prompt tokens read
// from or written to the cache, which Anthropic counts apart.
type messagesUsage struct {
	InputTokens   optCount `json:"input_tokens"`
	OutputTokens  optCount `json:"output_tokens"`
	CacheRead     optCount `json:"cache_read_input_tokens"`
	CacheCreation optCount `json:"cache_creation_input_tokens"`
}

// messagesEvent is the subset of a Messages stream event the decoder reads.
type messagesEvent struct {
	Type    messagesType `json:"type"`
	Message *struct {
		Usage *messagesUsage `json:"usage"`
	} `json:"message"`
	Delta struct {
		Type     deltaType `json:"type"`
		Text     jsonText  `json:"text"`
		Thinking jsonText  `json:"thinking"`
		Partial  jsonText  `json:"partial_json"`
	} `json:"delta"`
	Usage *messagesUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// deltaType is a content_block_delta's delta.type: text_delta, thinking_delta,
// input_json_delta (a part of a tool call's arguments: progress, no token), or another
// (signature_delta), which carries no token of the answer or its reasoning.
type deltaType uint8

const (
	deltaOther deltaType = iota
	deltaText
	deltaThinking
	deltaInput
)

// UnmarshalJSON implements json.Unmarshaler.
func (t *deltaType) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"text_delta"`:
		*t = deltaText
	case `"thinking_delta"`:
		*t = deltaThinking
	case `"input_json_delta"`:
		*t = deltaInput
	default:
		*t = deltaOther
	}
	return nil
}

// messagesDecoder decodes a Messages stream's events (DESIGN §3.11), content_block_delta
// without allocating (scanMessagesDelta), the others with encoding/json: text_delta is an answer
// chunk, thinking_delta a reasoning chunk; message_start's usage gives the prompt's tokens,
// message_delta's the output's (cumulative), message_stop ends the stream; error is an
// error. Events out of order (a delta outside a content block, anything before message_start)
// are a bad chunk.
type messagesDecoder struct {
	started, inBlock bool
	// The prompt's counts last reported: input (uncached), cache read, cache written.
	input, cacheRead, cacheWrite optCount
	ev                           messagesEvent // the event decoded last, reused: it escapes to encoding/json
}

func (d *messagesDecoder) decode(payload []byte) (chunkResult, error) {
	ev := &d.ev
	if err := decodeEvent(payload, ev, scanMessagesDelta); err != nil {
		return chunkResult{}, err
	}
	var r chunkResult
	if !d.started && ev.Type != msgStart && ev.Type != msgError && ev.Type != msgPing && ev.Type != msgOther {
		return r, fmt.Errorf("%w: an event before message_start: %q", errBadChunk, truncate(payload, 120))
	}
	switch ev.Type {
	case msgStart:
		if d.started {
			return r, fmt.Errorf("%w: a second message_start: %q", errBadChunk, truncate(payload, 120))
		}
		d.started = true
		if ev.Message != nil && ev.Message.Usage != nil {
			r.usage = d.usage(ev.Message.Usage)
		}
	case msgBlockStart:
		d.inBlock = true
	case msgBlockStop:
		d.inBlock = false
	case msgBlockDelta:
		if !d.inBlock {
			return r, fmt.Errorf("%w: content_block_delta outside a content block: %q", errBadChunk, truncate(payload, 120))
		}
		switch ev.Delta.Type {
		case deltaText:
			if err := ev.Delta.Text.stringField("delta.text", payload); err != nil {
				return r, err
			}
			r.answer = ev.Delta.Text.set
			if r.answer {
				r.reply, r.replies = ev.Delta.Text.raw, 1
			}
		case deltaThinking:
			if err := ev.Delta.Thinking.stringField("delta.thinking", payload); err != nil {
				return r, err
			}
			r.reasoning = ev.Delta.Thinking.set
		case deltaInput:
			r.progress = ev.Delta.Partial.set
		}
	case msgDelta:
		if ev.Usage != nil {
			r.usage = d.usage(ev.Usage)
		}
	case msgStop:
		r.end = true
	case msgError:
		e := &goopenai.APIError{Message: "error event: " + string(truncate(payload, 200))}
		if ev.Error != nil && ev.Error.Message != "" {
			e.Message, e.Type = ev.Error.Type+": "+ev.Error.Message, ev.Error.Type
			if n, ok := errorTypeStatus[ev.Error.Type]; ok {
				e.Code = n
			}
		}
		return r, e
	}
	return r, nil
}

// usage returns the counts of u as the record's: output_tokens the completion's; the
// prompt's the sum of input_tokens and the cache's reads and writes as last reported (a
// message_delta may repeat some of them); the cache's reads the cached tokens.
func (d *messagesDecoder) usage(u *messagesUsage) usageCounts {
	out := usageCounts{completion: u.OutputTokens}
	for _, c := range []struct{ dst, v *optCount }{{&d.input, &u.InputTokens}, {&d.cacheRead, &u.CacheRead}, {&d.cacheWrite, &u.CacheCreation}} {
		if c.v.set {
			*c.dst = *c.v
		}
	}
	if d.input.set {
		out.prompt = optCount{n: d.input.n + d.cacheRead.n + d.cacheWrite.n, set: true}
	}
	if u.CacheRead.set {
		out.cached = d.cacheRead
	}
	return out
}

// messagesHeader returns h with the Messages API's headers: the key as x-api-key (unless
// empty) and anthropic-version (unless h names one). A key beside an x-api-key header, or
// beside Authorization, is refused as two credentials.
func messagesHeader(h http.Header, apiKey string) (http.Header, error) {
	out := h.Clone()
	if out == nil {
		out = make(http.Header)
	}
	if apiKey != "" {
		if out.Get("X-Api-Key") != "" {
			return nil, errors.New("header X-Api-Key: conflicts with the API key (send one or the other)")
		}
		out.Set("X-Api-Key", apiKey)
	}
	if out.Get("Anthropic-Version") == "" {
		out.Set("Anthropic-Version", anthropicVersion)
	}
	return out, nil
}
