package sim

import (
	"fmt"
	"strconv"
)

// The stream writers of the Responses and Messages APIs (streamWriter, apis.go): the chat
// engine's chunks written as those APIs' named events.

// responsesWriter writes a Responses stream
// (https://platform.openai.com/docs/api-reference/responses-streaming): response.created and
// response.in_progress, a response.reasoning_text.delta for the reasoning tokens of a chunk
// and a response.output_text.delta for its answer tokens, and response.completed (or
// response.incomplete when max_output_tokens cut the output) with the usage.
type responsesWriter struct {
	w     streamSink
	p     *plan
	model []byte
	id    string
	seq   int
	buf   []byte
}

// head appends an event's name and the start of its data: type and sequence_number.
func (r *responsesWriter) head(b []byte, typ string) []byte {
	b = sseEvent(b, typ)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = strconv.AppendInt(b, int64(r.seq), 10)
	r.seq++
	return b
}

// response appends the response object of status.
func (r *responsesWriter) response(b []byte, status string) []byte {
	b = append(b, `,"response":{"id":"`...)
	b = append(b, r.id...)
	b = append(b, `","object":"response","created_at":`...)
	b = strconv.AppendInt(b, r.p.created, 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","model":`...)
	return append(b, r.model...)
}

func (r *responsesWriter) start() error {
	b := r.buf[:0]
	for _, typ := range []string{"response.created", "response.in_progress"} {
		b = r.head(b, typ)
		b = r.response(b, "in_progress")
		b = endEvent(append(b, `,"output":[]}}`...))
	}
	r.buf = b
	return send(r.w, b)
}

func (r *responsesWriter) content(from, k int, _ string) error {
	b := r.buf[:0]
	reason := min(max(r.p.reasoning-from, 0), k)
	for _, part := range []struct {
		typ, text string
		n         int
	}{{"response.reasoning_text.delta", reasoningText, reason}, {"response.output_text.delta", answerText, k - reason}} {
		if part.n == 0 {
			continue
		}
		b = r.head(b, part.typ)
		b = append(b, `,"item_id":"msg_`...)
		b = append(b, r.id[len("resp_"):]...)
		b = append(b, `","output_index":0,"content_index":0,"delta":"`...)
		b = appendTokens(b, part.text, part.n)
		b = endEvent(append(b, `"}`...))
	}
	r.buf = b
	return send(r.w, b)
}

func (r *responsesWriter) done(u *usageOut) error {
	typ, status := "response.completed", "completed"
	if r.p.finish == "length" {
		typ, status = "response.incomplete", "incomplete"
	}
	b := r.head(r.buf[:0], typ)
	b = r.response(b, status)
	if status == "incomplete" {
		b = append(b, `,"incomplete_details":{"reason":"max_output_tokens"}`...)
	}
	if u != nil {
		var cached, reasoning int64
		if d := u.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		if d := u.CompletionTokensDetails; d != nil {
			reasoning = d.ReasoningTokens
		}
		b = fmt.Appendf(b, `,"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}`,
			u.PromptTokens, cached, u.CompletionTokens, reasoning, u.TotalTokens)
	}
	b = endEvent(append(b, "}}"...))
	r.buf = b
	return send(r.w, b)
}

// messagesWriter writes a Messages stream (https://docs.anthropic.com/en/api/messages-streaming):
// message_start with the prompt's usage and a ping, a thinking content block for the
// reasoning tokens and a text block for the answer (content_block_start, a
// content_block_delta per chunk, content_block_stop), message_delta with the stop reason and
// the output's usage, and message_stop. As Anthropic counts them, input_tokens excludes the
// prompt tokens read from the cache, which cache_read_input_tokens reports.
type messagesWriter struct {
	w     streamSink
	p     *plan
	model []byte
	id    string
	u0    *usageOut // the usage message_start reports (nil: none)
	block string    // the open content block's type ("" none)
	index int       // the open block's index
	buf   []byte
}

// appendUsage appends u's counts as Anthropic's usage fields, after a '{'.
func appendUsage(b []byte, u *usageOut) []byte {
	input := u.PromptTokens
	if d := u.PromptTokensDetails; d != nil {
		input -= d.CachedTokens
		b = fmt.Appendf(b, `"cache_read_input_tokens":%d,`, d.CachedTokens)
	}
	return fmt.Appendf(b, `"input_tokens":%d,"output_tokens":%d}`, input, u.CompletionTokens)
}

func (m *messagesWriter) start() error {
	b := sseEvent(m.buf[:0], "message_start")
	b = append(b, `{"type":"message_start","message":{"id":"`...)
	b = append(b, m.id...)
	b = append(b, `","type":"message","role":"assistant","content":[],"model":`...)
	b = append(b, m.model...)
	b = append(b, `,"stop_reason":null,"stop_sequence":null`...)
	if m.u0 != nil {
		b = appendUsage(append(b, `,"usage":{`...), m.u0)
	}
	b = endEvent(append(b, "}}"...))
	b = endEvent(append(sseEvent(b, "ping"), `{"type":"ping"}`...))
	m.buf = b
	return send(m.w, b)
}

// blockStart appends the events that close the open block unless it is of typ, and open one
// of typ.
func (m *messagesWriter) blockStart(b []byte, typ string) []byte {
	if m.block == typ {
		return b
	}
	if m.block != "" {
		b = m.blockStop(b)
		m.index++
	}
	m.block = typ
	b = sseEvent(b, "content_block_start")
	b = fmt.Appendf(b, `{"type":"content_block_start","index":%d,"content_block":{"type":"%s","%s":""}}`, m.index, typ, typ)
	return endEvent(b)
}

// blockStop appends the open block's content_block_stop.
func (m *messagesWriter) blockStop(b []byte) []byte {
	b = sseEvent(b, "content_block_stop")
	b = fmt.Appendf(b, `{"type":"content_block_stop","index":%d}`, m.index)
	m.block = ""
	return endEvent(b)
}

func (m *messagesWriter) content(from, k int, _ string) error {
	b := m.buf[:0]
	reason := min(max(m.p.reasoning-from, 0), k)
	for _, part := range []struct {
		block, delta, field, text string
		n                         int
	}{{"thinking", "thinking_delta", "thinking", reasoningText, reason}, {"text", "text_delta", "text", answerText, k - reason}} {
		if part.n == 0 {
			continue
		}
		b = m.blockStart(b, part.block)
		b = sseEvent(b, "content_block_delta")
		b = append(b, `{"type":"content_block_delta","index":`...)
		b = strconv.AppendInt(b, int64(m.index), 10)
		b = append(b, `,"delta":{"type":"`...)
		b = append(b, part.delta...)
		b = append(b, `","`...)
		b = append(b, part.field...)
		b = append(b, `":"`...)
		b = appendTokens(b, part.text, part.n)
		b = endEvent(append(b, `"}}`...))
	}
	m.buf = b
	return send(m.w, b)
}

func (m *messagesWriter) done(u *usageOut) error {
	b := m.buf[:0]
	if m.block != "" {
		b = m.blockStop(b)
	}
	stop := "end_turn"
	if m.p.finish == "length" {
		stop = "max_tokens"
	}
	b = sseEvent(b, "message_delta")
	b = fmt.Appendf(b, `{"type":"message_delta","delta":{"stop_reason":"%s","stop_sequence":null}`, stop)
	if u != nil {
		b = appendUsage(append(b, `,"usage":{`...), u)
	}
	b = endEvent(append(b, '}'))
	b = endEvent(append(sseEvent(b, "message_stop"), `{"type":"message_stop"}`...))
	m.buf = b
	return send(m.w, b)
}
