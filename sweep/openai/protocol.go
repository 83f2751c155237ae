package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
)

// protocol is one API's side of a request (DESIGN §3.11): how the request is opened and how
// its stream's events are decoded. The rest of a request's life (deadlines, clocks, read lag,
// retries, the stream's end and its failures) is Client.Do's, the same for every API.
type protocol interface {
	// open sends req with ctx (which carries the request's reqState) and returns the stream
	// it opened; the event body is the reqState's (doer.Do sets it), the caller closes it.
	open(ctx context.Context, c *Client, req *record.Request) (io.Closer, error)
	// events returns the decoder of one stream's payloads, nil for chat's (scanChunk).
	events() eventDecoder
	// terminal names what ends a stream of the API (doneTerminal, or the terminal event's
	// type), for the errors of a stream that ends without it or with nothing before it.
	terminal() string
	// mergesIgnoreEOS reports that the doer adds ignore_eos and min_tokens to the body of an
	// IgnoreEOS request (go-openai's bodies cannot carry them); the other protocols write
	// what their API accepts themselves.
	mergesIgnoreEOS() bool
}

// eventDecoder decodes the data payloads of one stream. A result with end set is the stream's
// terminal event: Client.readChunks stops there, as at chat's [DONE].
type eventDecoder interface {
	decode(payload []byte) (chunkResult, error)
}

// protocolOf returns api's protocol; ok is false for an API the client does not speak.
func protocolOf(api record.API) (protocol, bool) {
	switch api {
	case record.APIChat:
		return chatProtocol{}, true
	case record.APICompletions:
		return completionsProtocol{}, true
	case record.APIResponses:
		return responsesProtocol{}, true
	case record.APIMessages:
		return messagesProtocol{}, true
	case record.APIEmbeddings:
		return embeddingsProtocol{}, true
	}
	return nil, false
}

// chatTemplated reports whether the server renders api's prompts through the model's chat
// template (vLLM's /v1/responses and /v1/messages do, as /v1/chat/completions does).
func chatTemplated(api record.API) bool {
	return api == record.APIChat || api == record.APIResponses || api == record.APIMessages
}

// doneTerminal is the terminal of chat's and completions' streams: the data line [DONE].
const doneTerminal = "[DONE]"

// chatProtocol is POST /chat/completions through go-openai.
type chatProtocol struct{}

func (chatProtocol) open(ctx context.Context, c *Client, req *record.Request) (io.Closer, error) {
	cr := goopenai.ChatCompletionRequest{
		Model:         c.model(req),
		Messages:      chatMessages(req),
		MaxTokens:     req.MaxTokens,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	if c.maxCompletionTokens {
		cr.MaxTokens, cr.MaxCompletionTokens = 0, req.MaxTokens
	}
	cs, err := c.oc.CreateChatCompletionStream(ctx, cr)
	if err != nil {
		return nil, err
	}
	return cs, nil
}

func (chatProtocol) events() eventDecoder  { return nil }
func (chatProtocol) terminal() string      { return doneTerminal }
func (chatProtocol) mergesIgnoreEOS() bool { return true }

// completionsProtocol is POST /completions through go-openai.
type completionsProtocol struct{}

func (completionsProtocol) open(ctx context.Context, c *Client, req *record.Request) (io.Closer, error) {
	cr := goopenai.CompletionRequest{
		Model:         c.model(req),
		Prompt:        req.Prompt,
		MaxTokens:     req.MaxTokens,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	cs, err := c.oc.CreateCompletionStream(ctx, cr)
	if err != nil {
		return nil, err
	}
	return cs, nil
}

func (completionsProtocol) events() eventDecoder  { return nil }
func (completionsProtocol) terminal() string      { return doneTerminal }
func (completionsProtocol) mergesIgnoreEOS() bool { return true }

// postStream POSTs body (JSON) to the base URL's path as a stream request through the client's
// doer, the HTTPDoer go-openai sends through: the same transport, headers, redirect checks,
// retry, body limits and event body; the key goes as the API sends it (authorize). A failure status is an error as go-openai makes it (an
// *goopenai.APIError from an error envelope, else a *goopenai.RequestError).
func (c *Client) postStream(ctx context.Context, path string, body any) (io.Closer, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai: encode request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.opts.BaseURL, "/")+path, bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("openai: new request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("Cache-Control", "no-cache")
	c.authorize(hr)
	resp, err := c.doer.Do(hr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		defer resp.Body.Close()
		return nil, errorResponse(resp)
	}
	return resp.Body, nil
}

// errorResponse is the error of a failure status, as go-openai's handleErrorResp builds it: the
// error object of an {"error": {...}} body (OpenAI's and Anthropic's envelope) with the
// status, else a RequestError with the status and the body.
func errorResponse(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("error, reading response body: %w", err)
	}
	var er goopenai.ErrorResponse
	if json.Unmarshal(body, &er) != nil || er.Error == nil {
		return &goopenai.RequestError{HTTPStatus: resp.Status, HTTPStatusCode: resp.StatusCode, Body: body,
			Err: fmt.Errorf("status %s", resp.Status)}
	}
	er.Error.HTTPStatus, er.Error.HTTPStatusCode = resp.Status, resp.StatusCode
	return er.Error
}

// turn is one message of a Responses input or a Messages conversation.
type turn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// turns returns req's history and then its prompt as the user's turn.
func turns(req *record.Request) []turn {
	out := make([]turn, 0, len(req.History)+1)
	for _, m := range req.History {
		out = append(out, turn{Role: m.Role, Content: m.Content})
	}
	return append(out, turn{Role: "user", Content: req.Prompt})
}

// terminalNamer is an eventDecoder whose API has more than one terminal event, which names
// the one its stream ended with ("" before it): the Responses API's response.completed or
// response.incomplete.
type terminalNamer interface{ terminalSeen() string }

// endedWith names the terminal event a stream decoded by dec ended with: the one dec saw
// where it tells (terminalNamer), else the protocol's only one.
func (c *Client) endedWith(dec eventDecoder) string {
	if n, ok := dec.(terminalNamer); ok && n.terminalSeen() != "" {
		return n.terminalSeen()
	}
	return c.proto.terminal()
}
