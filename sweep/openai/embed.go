package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
)

// errBadEmbeddings fails an embeddings response whose body is not a valid answer to its
// request (DESIGN §7): not JSON, an error object, no usage, or not one embedding per input.
var errBadEmbeddings = errors.New("bad embeddings response")

// embeddingsProtocol is POST /embeddings through go-openai: one JSON answer, no stream. It
// opens nothing: the doer reads the answer whole into the request's reqState (readWhole),
// and Client.Do takes it from there (embedResult).
type embeddingsProtocol struct{}

func (embeddingsProtocol) open(ctx context.Context, c *Client, req *record.Request) (io.Closer, error) {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	if st == nil {
		return nil, errors.New("openai: embeddings: no request state")
	}
	return nil, c.sendEmbeddings(ctx, req, st)
}

func (embeddingsProtocol) events() eventDecoder  { return nil }
func (embeddingsProtocol) terminal() string      { return "the whole answer" }
func (embeddingsProtocol) mergesIgnoreEOS() bool { return false }

// sendEmbeddings sends req's inputs as one embeddings request (POST /v1/embeddings, not
// streamed) through go-openai. The doer reads a 2xx body whole into st (readWhole), so the
// answer is decided on those bytes (embedResult), not on go-openai's decode of them: its
// error then says less than the validation does. It returns an error only when no 2xx body
// came (a refusal, a transport failure, a deadline).
func (c *Client) sendEmbeddings(ctx context.Context, req *record.Request, st *reqState) error {
	er := goopenai.EmbeddingRequest{Input: embedInputs(req), Model: goopenai.EmbeddingModel(c.model(req))}
	_, err := c.oc.CreateEmbeddings(ctx, er)
	if st.raw != nil {
		return nil
	}
	if err == nil {
		// doer.Do reads every measured 2xx answer whole: only a response that bypassed it
		// would leave none.
		err = fmt.Errorf("%w: the response has no body", errBadEmbeddings)
	}
	return err
}

// embedInputs are the inputs req embeds: its Inputs, or, for a request that has none (the
// preflight's, prompt sizing's probes), its Prompt alone.
func embedInputs(req *record.Request) []string {
	if len(req.Inputs) > 0 {
		return req.Inputs
	}
	return []string{req.Prompt}
}

// embedResult fills rec from the embeddings answer the doer read whole (st.raw, its last
// byte at st.bodyAt): E2E is the time from t_send to that byte (the request's latency),
// PromptTokens usage.prompt_tokens where believed, else the workload's count; TTFT, chunks
// and output tokens do not apply and stay 0. A body that is not a valid answer fails the
// record as bad_chunk.
func (c *Client) embedResult(ctx, reqCtx context.Context, st *reqState, tSend time.Time,
	req *record.Request, rec *record.Record) {
	rec.E2E = max(st.bodyAt.Sub(tSend), 0)
	n, err := decodeEmbeddings(st.raw, len(embedInputs(req)))
	if err != nil {
		c.fail(ctx, reqCtx, st, rec, err, true)
		return
	}
	rec.PromptTokens = req.PromptTokens
	promptUsage(rec, n, req, st.sentBytes) // its note is appended to rec.TokensNote
	rec.Status, rec.ErrorClass, rec.Error = record.StatusOK, "", ""
}

// embeddingsBody is what decodeEmbeddings reads of an embeddings response (the OpenAI API
// reference's "The embedding object" list,
// https://platform.openai.com/docs/api-reference/embeddings/object): the vectors stay raw,
// checked for shape, never parsed.
type embeddingsBody struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens *int `json:"prompt_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
	// Message and Object are vLLM's error shape ({"object":"error","message":…}).
	Object  string `json:"object"`
	Message string `json:"message"`
	Code    any    `json:"code"`
}

// decodeEmbeddings checks that raw answers an embeddings request of inputs inputs (one
// embedding, an array of numbers or a base64 string, per input, each index once, and usage
// with prompt_tokens) and returns usage.prompt_tokens. Its errors wrap errBadEmbeddings, or
// are the server's error object (*goopenai.APIError, classified by its code).
func decodeEmbeddings(raw []byte, inputs int) (promptTokens int, err error) {
	body := bytes.TrimSpace(raw)
	if len(body) == 0 {
		return 0, fmt.Errorf("%w: empty body", errBadEmbeddings)
	}
	if body[0] != '{' {
		return 0, fmt.Errorf("%w: the body is not a JSON object (it begins %q)", errBadEmbeddings, clip(body, 64))
	}
	var b embeddingsBody
	if err := json.Unmarshal(body, &b); err != nil {
		return 0, fmt.Errorf("%w: %v (the body begins %q)", errBadEmbeddings, err, clip(body, 64))
	}
	if e := b.apiError(); e != nil {
		return 0, fmt.Errorf("error object in a 2xx answer: %w", e)
	}
	if len(b.Data) != inputs {
		return 0, fmt.Errorf("%w: %d embeddings in data for %d inputs", errBadEmbeddings, len(b.Data), inputs)
	}
	seen := make([]bool, inputs)
	for i, d := range b.Data {
		if e := bytes.TrimSpace(d.Embedding); len(e) < 3 || (e[0] != '[' && e[0] != '"') {
			return 0, fmt.Errorf("%w: data[%d].embedding is %q, not a vector", errBadEmbeddings, i, clip(e, 32))
		}
		if d.Index == nil {
			continue
		}
		if k := *d.Index; k < 0 || k >= inputs || seen[k] {
			return 0, fmt.Errorf("%w: data[%d].index %d is out of [0, %d) or repeated", errBadEmbeddings, i, k, inputs)
		}
		seen[*d.Index] = true
	}
	if b.Usage == nil || b.Usage.PromptTokens == nil {
		return 0, fmt.Errorf("%w: no usage.prompt_tokens (the API reference requires it)", errBadEmbeddings)
	}
	return *b.Usage.PromptTokens, nil
}

// apiError returns the error object the body carries, OpenAI's ({"error":{…}}, or a plain
// string) or vLLM's ({"object":"error",…}); nil when it carries none.
func (b *embeddingsBody) apiError() *goopenai.APIError {
	if b.Object == "error" {
		return &goopenai.APIError{Message: b.Message, Code: b.Code}
	}
	e := bytes.TrimSpace(b.Error)
	if len(e) == 0 || bytes.Equal(e, []byte("null")) {
		return nil
	}
	var ae goopenai.APIError
	if json.Unmarshal(e, &ae) != nil || ae.Message == "" {
		ae = goopenai.APIError{Message: string(clip(e, 200))}
	}
	return &ae
}

// clip returns b's first n bytes, whole UTF-8 only.
func clip(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return []byte(strings.ToValidUTF8(string(b[:n]), "") + "…")
}

// readWhole reads the 2xx answer of a measured request that is one JSON body (embeddings)
// into st, at most limit bytes, stamps its last byte (st.bodyAt) and gives go-openai the
// bytes read. The connection goes back to the pool with the body read to its end.
func (st *reqState) readWhole(resp *http.Response, limit int64) error {
	st.reading = true
	raw, err := io.ReadAll(&limitedBody{rc: resp.Body, left: limit})
	st.bodyAt = time.Now()
	_ = resp.Body.Close()
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			return fmt.Errorf("%w: more than %d bytes (max_body_bytes)", errBodyTooLarge, limit)
		}
		return fmt.Errorf("read the body: %w", err)
	}
	st.raw = raw
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return nil
}
