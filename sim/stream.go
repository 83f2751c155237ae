package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// streamSink is where a stream's body goes: the ResponseWriter, or a connection hijacked for
// close_after_stream (closeconn.go). Flush sends what was written.
type streamSink interface {
	Write(b []byte) (int, error)
	Flush() error
}

// responseSink writes a stream through net/http.
type responseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (r responseSink) Write(b []byte) (int, error) { return r.w.Write(b) }

func (r responseSink) Flush() error { return r.rc.Flush() }

// openStream answers 200 with the event-stream headers and returns where the body goes, the
// context that ends when the client leaves, and end, which the handler calls once when the
// stream is over, saying whether it completed. With close_after_stream the connection is
// taken over so that it closes after the stream (see hijackStream).
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) (context.Context, streamSink, func(complete bool)) {
	if s.cfg.CloseAfterStream {
		if ctx, sink, end, ok := s.hijackStream(w, r); ok {
			return ctx, sink, end
		}
	}
	h := w.Header()
	h.Set("Content-Type", eventStreamType)
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return r.Context(), responseSink{w: w, rc: http.NewResponseController(w)}, func(bool) {}
}

// eventStreamType is the Content-Type of a stream.
const eventStreamType = "text/event-stream; charset=utf-8"

// chunkWriter renders SSE chunks without reflection.
type chunkWriter struct {
	w       streamSink
	p       *plan
	head    []byte // `data: {"id":...,"choices":[{"index":0,`
	buf     []byte
	model   []byte
	created string
	id      string
}

func newChunkWriter(w streamSink, p *plan, model string) *chunkWriter {
	mj, _ := json.Marshal(model)
	c := &chunkWriter{w: w, p: p, model: mj, created: strconv.FormatInt(p.created, 10)}
	object := "chat.completion.chunk"
	c.id = "chatcmpl-" + strconv.FormatUint(p.seq, 16)
	if p.kind == apiCompletions {
		object = "text_completion"
		c.id = "cmpl-" + strconv.FormatUint(p.seq, 16)
	}
	c.head = fmt.Appendf(nil, `data: {"id":"%s","object":"%s","created":%s,"model":%s,"choices":[`, c.id, object, c.created, mj)
	return c
}

// content writes one chunk carrying the k tokens after the first from. In a chat stream the
// tokens before p.reasoning go in delta.reasoning_content ("hmm " each) and the rest in
// delta.content ("tok " each), as vLLM's reasoning parsers stream them; a chunk across the
// boundary carries both fields, as vLLM's does when the end-of-thinking token falls inside it.
// finish is "" or the finish reason.
func (c *chunkWriter) content(from, k int, finish string) error {
	b := append(c.buf[:0], c.head...)
	if c.p.kind == apiChat {
		r := min(max(c.p.reasoning-from, 0), k)
		b = append(b, `{"index":0,"delta":{`...)
		if r > 0 {
			b = append(b, `"reasoning_content":"`...)
			b = appendTokens(b, reasoningText, r)
			b = append(b, '"')
		}
		if k > r {
			if r > 0 {
				b = append(b, ',')
			}
			b = append(b, `"content":"`...)
			b = appendTokens(b, answerText, k-r)
			b = append(b, '"')
		}
		b = append(b, `},"logprobs":null,"finish_reason":`...)
	} else {
		b = append(b, `{"index":0,"text":"`...)
		b = appendTokens(b, answerText, k)
		b = append(b, `","logprobs":null,"finish_reason":`...)
	}
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, finish...)
		b = append(b, '"')
	}
	b = append(b, "}]}\n\n"...)
	c.buf = b
	return c.send(b)
}

// The text of one output token: one token under either Tokenizer rule.
const (
	answerText    = "tok "
	reasoningText = "hmm "
)

// appendTokens appends k copies of one token's text.
func appendTokens(b []byte, text string, k int) []byte {
	for range k {
		b = append(b, text...)
	}
	return b
}

// start writes vLLM's first chat chunk, or, for completions, sends the headers.
func (c *chunkWriter) start() error {
	if c.p.kind != apiChat {
		return c.w.Flush()
	}
	return c.role()
}

// role writes vLLM's first chat chunk: delta {role: assistant, content: ""}.
func (c *chunkWriter) role() error {
	b := append(c.buf[:0], c.head...)
	b = append(b, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	c.buf = b
	return c.send(b)
}

// done writes the include_usage chunk (empty choices) when the request asked for it and u is
// not nil, then [DONE].
func (c *chunkWriter) done(u *usageOut) error {
	b := c.buf[:0]
	if c.p.includeUsage && u != nil {
		b = append(b, c.head...)
		b = fmt.Appendf(b, `],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d`,
			u.PromptTokens, u.TotalTokens, u.CompletionTokens)
		if d := u.PromptTokensDetails; d != nil {
			b = fmt.Appendf(b, `,"prompt_tokens_details":{"cached_tokens":%d}`, d.CachedTokens)
		}
		if d := u.CompletionTokensDetails; d != nil {
			b = fmt.Appendf(b, `,"completion_tokens_details":{"reasoning_tokens":%d}`, d.ReasoningTokens)
		}
		b = append(b, "}}\n\n"...)
	}
	b = append(b, "data: [DONE]\n\n"...)
	c.buf = b
	return c.send(b)
}

func (c *chunkWriter) send(b []byte) error { return send(c.w, b) }

// streamResponse streams the request's tokens as server-sent events. The first chunk carries
// the first token; later chunks carry tokens_per_chunk tokens (the last one the remainder).
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, p *plan, src source) {
	ctx, sink, end := s.openStream(w, r)
	complete := false
	defer func() { end(complete) }() // also when a disconnect fault aborts the handler
	cw := s.newStreamWriter(sink, p)
	if cw.start() != nil {
		return
	}
	k := s.cfg.TokensPerChunk
	sent := 0
	stalled := false
	for sent < p.outputTokens {
		if sent >= p.disconnectAt && p.disconnectAt >= 0 {
			// Cut the connection mid-stream; the deferred release frees the request.
			panic(http.ErrAbortHandler)
		}
		if sent >= p.stallAt && p.stallAt >= 0 && !stalled {
			stalled = true
			if !s.sleepCtx(ctx, s.cfg.Faults.StallDuration) {
				return
			}
		}
		need := min(sent+k, p.outputTokens)
		if sent == 0 {
			need = 1
		}
		avail, err := src.await(ctx, need)
		if err != nil {
			return
		}
		for sent < avail {
			if (sent >= p.disconnectAt && p.disconnectAt >= 0) || (sent >= p.stallAt && p.stallAt >= 0 && !stalled) {
				break // the fault strikes at the top of the outer loop
			}
			m := min(k, avail-sent)
			if sent == 0 {
				m = 1
			}
			if m < k && sent+m < p.outputTokens && sent > 0 {
				break // wait for a full chunk
			}
			finish := ""
			if sent+m == p.outputTokens {
				finish = p.finish
				// The finished sequence's blocks are cached before the client can see its
				// last token, so a follow-up request always finds them.
				s.cacheOutput(p, p.outputTokens)
			}
			if s.eng == nil {
				// Counted when generated, before the client can see them (as the engine
				// counts at the end of its step): /metrics never lags what a client read.
				s.fixedGen.Add(int64(m))
			}
			if err := cw.content(sent, m, finish); err != nil {
				return
			}
			sent += m
		}
	}
	// The request is finished before its last bytes reach the client, as a server's scheduler
	// frees it with its last token: a client that has read [DONE] no longer counts as running.
	src.release()
	complete = cw.done(s.cfg.reportedUsage(p, sent)) == nil
}
