package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// The APIs besides chat and completions, served by the same engine: the request is read as a
// chat request (its messages go through the chat template, as vLLM renders them) and only
// the stream's events are the API's own (responsesWriter, messagesWriter).
const (
	apiResponses apiKind = iota + 2 // POST /v1/responses (OpenAI Responses)
	apiMessages                     // POST /v1/messages (Anthropic Messages)
)

// anthropicErrorBody is Anthropic's error envelope: {"type": "error", "error": {type, message}}.
type anthropicErrorBody struct {
	Type  string         `json:"type"`
	Error anthropicError `json:"error"`
}

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicTypes maps an HTTP status to the Anthropic error type that stands for it
// (https://docs.anthropic.com/en/api/errors).
var anthropicTypes = map[int]string{400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error",
	500: "api_error", 503: "overloaded_error"}

// writeAPIError writes an error of status in kind's envelope: Anthropic's for the Messages
// API, OpenAI's (writeError) for the others.
func writeAPIError(w http.ResponseWriter, kind apiKind, status int, typ, msg string) {
	if kind != apiMessages {
		writeError(w, status, typ, msg)
		return
	}
	at, ok := anthropicTypes[status]
	if !ok {
		at = "api_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(anthropicErrorBody{Type: "error", Error: anthropicError{Type: at, Message: msg}})
}

// asChat reads a Responses or Messages request as the chat request the engine serves (the
// other kinds are returned as they are): a Responses input (a string, or messages) becomes
// the messages and max_output_tokens max_tokens; a Messages request must name max_tokens, as
// Anthropic's requires. Both always report usage. Both are streamed only (stream true). On an
// error it answers 400 in the API's envelope and returns false.
func asChat(w http.ResponseWriter, g *genRequest, kind apiKind) (apiKind, bool) {
	var err error
	switch kind {
	case apiResponses:
		err = responsesAsChat(g)
	case apiMessages:
		if g.MaxTokens == nil {
			err = errors.New("max_tokens: Field required")
		}
	default:
		return kind, true
	}
	if err == nil && !g.Stream {
		err = errors.New("stream: the simulator serves this API streamed only (stream: true)")
	}
	if err != nil {
		writeAPIError(w, kind, http.StatusBadRequest, "BadRequestError", err.Error())
		return kind, false
	}
	g.StreamOptions = &streamOptions{IncludeUsage: true}
	return apiChat, true
}

// responsesAsChat moves a Responses request's input and max_output_tokens to the chat fields.
func responsesAsChat(g *genRequest) error {
	g.MaxTokens, g.MaxCompletionTokens = g.MaxOutputTokens, nil
	in := bytes.TrimSpace(g.Input)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		return errors.New("input: required")
	}
	if in[0] == '"' {
		g.Messages = []chatMessage{{Role: "user", Content: json.RawMessage(in)}}
		return nil
	}
	if err := json.Unmarshal(in, &g.Messages); err != nil {
		return fmt.Errorf("input: must be a string or a list of messages: %w", err)
	}
	return nil
}

// sseEvent appends one named event: "event: NAME\ndata: " + the data the caller appends,
// ended by endEvent.
func sseEvent(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	return append(b, "\ndata: "...)
}

// endEvent ends an event's data line and the event.
func endEvent(b []byte) []byte { return append(b, "\n\n"...) }

// injectedStreamError answers the error_rate fault of a Responses or Messages request as
// those APIs report a failure after the stream began: 200, then the API's error event
// (response.failed with code server_error; error with type api_error).
func (s *Server) injectedStreamError(w http.ResponseWriter, r *http.Request, kind apiKind, msg string) {
	_, sink, end := s.openStream(w, r)
	defer end(false)
	mj, _ := json.Marshal(msg)
	var b []byte
	if kind == apiMessages {
		b = sseEvent(b, "error")
		b = fmt.Appendf(b, `{"type":"error","error":{"type":"api_error","message":%s}}`, mj)
	} else {
		b = sseEvent(b, "response.failed")
		b = fmt.Appendf(b, `{"type":"response.failed","sequence_number":0,"response":{"object":"response","status":"failed","error":{"code":"server_error","message":%s}}}`, mj)
	}
	_, _ = sink.Write(endEvent(b))
	_ = sink.Flush()
}

// streamWriter writes one stream's events: start before the first token, content for each
// chunk of tokens, done after the last (u: the usage to report, nil for none). chunkWriter
// writes chat's and completions' chunks, responsesWriter and messagesWriter those APIs'
// events.
type streamWriter interface {
	start() error
	content(from, k int, finish string) error
	done(u *usageOut) error
}

// newStreamWriter returns the writer of p's stream, by the API it answers (p.wire).
func (s *Server) newStreamWriter(w streamSink, p *plan) streamWriter {
	mj, _ := json.Marshal(p.model) // the model asked for: the base's or an adapter's
	id := strconv.FormatUint(p.seq, 16)
	switch p.wire {
	case apiResponses:
		return &responsesWriter{w: w, p: p, model: mj, id: "resp_" + id}
	case apiMessages:
		return &messagesWriter{w: w, p: p, model: mj, id: "msg_" + id, u0: s.cfg.reportedUsage(p, 0)}
	}
	return newChunkWriter(w, p, p.model)
}

// send writes b and flushes it.
func send(w streamSink, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}
