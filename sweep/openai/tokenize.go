package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/workload"
)

// TokenizeTimeout bounds one call of the server's tokenize endpoint.
const TokenizeTimeout = 10 * time.Second

// tokenizeProbe is the text the probe of each form counts.
const tokenizeProbe = "hello world"

// tokenizeForm is one engine's shape of POST /tokenize at the server's root.
type tokenizeForm struct {
	// name names the form in the sizing record.
	name string
	// chat: the body carries the chat messages and counts include the chat template.
	chat bool
	body func(model, text string, extra map[string]json.RawMessage) any
	// count reads the number of tokens (and the context limit, when given) from a 200 body.
	count func(body []byte) (n, maxModelLen int, ok bool)
}

// tokenizeForms are tried in this order (DESIGN §3.1). A vLLM server answers the messages
// form (the count includes the chat template); SGLang the prompt form, with vLLM's answer;
// llama.cpp {"content"} with {"tokens": […]}; TGI {"inputs"} with a list of tokens.
var tokenizeForms = []tokenizeForm{
	{name: "messages form", chat: true, count: countVLLM,
		body: func(model, text string, extra map[string]json.RawMessage) any {
			b := map[string]any{"model": model, "add_generation_prompt": true,
				"messages": []map[string]string{{"role": "user", "content": text}}}
			if k, ok := extra["chat_template_kwargs"]; ok {
				b["chat_template_kwargs"] = k
			}
			return b
		}},
	{name: "prompt form", count: countVLLM,
		body: func(model, text string, _ map[string]json.RawMessage) any {
			return map[string]any{"model": model, "prompt": text}
		}},
	{name: "llama.cpp content form", count: countTokensObject,
		body: func(_, text string, _ map[string]json.RawMessage) any {
			return map[string]any{"content": text, "add_special": true}
		}},
	{name: "TGI inputs form", count: countTokenList,
		body: func(_, text string, _ map[string]json.RawMessage) any {
			return map[string]any{"inputs": text}
		}},
}

// countVLLM reads {"count": N, "max_model_len": L, "tokens": […]} (vLLM, SGLang).
func countVLLM(b []byte) (int, int, bool) {
	var r struct {
		Count       *int  `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}
	if json.Unmarshal(b, &r) != nil || r.Count == nil && r.Tokens == nil {
		return 0, 0, false
	}
	if r.Count != nil {
		return *r.Count, r.MaxModelLen, true
	}
	return len(r.Tokens), r.MaxModelLen, true
}

// countTokensObject reads {"tokens": […]} (llama.cpp; with_pieces gives objects).
func countTokensObject(b []byte) (int, int, bool) {
	var r struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if json.Unmarshal(b, &r) != nil || r.Tokens == nil {
		return 0, 0, false
	}
	return len(r.Tokens), 0, true
}

// countTokenList reads a list of tokens (TGI: [{"id", "text", "start", "stop"}, …]).
func countTokenList(b []byte) (int, int, bool) {
	var r []json.RawMessage
	if json.Unmarshal(b, &r) != nil || r == nil {
		return 0, 0, false
	}
	return len(r), 0, true
}

// Tokenize counts tokens with the server's own tokenize endpoint, in the form it answered.
// It implements workload.TokenCounter and is safe for concurrent use.
type Tokenize struct {
	c    *Client
	url  string
	form *tokenizeForm
	// withKey is set once a request without the key was refused (401/403) and one with it
	// answered; counts run concurrently.
	withKey atomic.Bool
	// maxModelLen is the context limit the probe's answer reported (0: none); set before t is
	// shared.
	maxModelLen int
	// hc sends on the client's pooled connections, fresh on a connection of its own: a count
	// whose pooled connection the server had closed (llama-server closes after every stream)
	// is sent once more on it. A count is idempotent, so any transport error is retried once.
	hc, fresh *http.Client
}

// Tokenize probes POST /tokenize at the server's root (the base URL without its /v1) in each
// known form (tokenizeForms; the messages form only for the chat API) and returns the first
// that counts the probe text. The API key and the secret headers are sent only after a refusal
// without them (401 or 403), as ServerInfo does, and redirects are not followed. An error says what each form got.
func (c *Client) Tokenize(ctx context.Context) (*Tokenize, error) {
	root, err := url.Parse(strings.TrimRight(c.opts.BaseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("openai: tokenize: %w", err)
	}
	root.Path = strings.TrimRight(strings.TrimSuffix(root.Path, "/v1"), "/") + "/tokenize"
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t := &Tokenize{c: c, url: root.String(),
		hc:    &http.Client{Transport: c.rt, CheckRedirect: noRedirect},
		fresh: &http.Client{Transport: c.freshRT, CheckRedirect: noRedirect},
	}
	var tried []string
	for i := range tokenizeForms {
		f := &tokenizeForms[i]
		if f.chat && !chatTemplated(c.api) {
			continue
		}
		t.form = f
		n, maxLen, err := t.count(ctx, tokenizeProbe)
		if err == nil && n > 0 {
			t.maxModelLen = maxLen
			return t, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("openai: tokenize: %w", ctx.Err())
		}
		if err == nil {
			err = fmt.Errorf("counted %d tokens in %q", n, tokenizeProbe)
		}
		tried = append(tried, fmt.Sprintf("%s: %v", f.name, err))
	}
	return nil, fmt.Errorf("openai: POST %s: no known form answered (%s)", redact.URL(t.url), strings.Join(tried, "; "))
}

// Counter returns t as the sizing's counter, named by its form.
func (t *Tokenize) Counter() *workload.Counter {
	return &workload.Counter{TokenCounter: t, Source: "POST /tokenize, " + t.form.name,
		Templated: t.form.chat, MaxModelLen: t.maxModelLen}
}

// CountTokens returns the server's count of text sent as the prompt.
func (t *Tokenize) CountTokens(ctx context.Context, text string) (int, error) {
	n, _, err := t.count(ctx, text)
	return n, err
}

// errTokenizeShape is the error of a 200 answer that is not the form's.
var errTokenizeShape = errors.New("the answer is not of this form")

// count POSTs text in t's form (again with the key after a 401 or 403 without it) and returns
// the count and the context limit the answer reports (0: none).
func (t *Tokenize) count(ctx context.Context, text string) (n, maxModelLen int, err error) {
	body, err := json.Marshal(t.form.body(t.c.opts.Model, text, t.c.extra))
	if err != nil {
		return 0, 0, fmt.Errorf("openai: tokenize: %w", err)
	}
	withKey := t.withKey.Load()
	code, b, err := t.post(ctx, body, withKey)
	if err == nil && (code == http.StatusUnauthorized || code == http.StatusForbidden) && !withKey && t.c.withheld() {
		if code, b, err = t.post(ctx, body, true); err == nil && code == http.StatusOK {
			t.withKey.Store(true)
		}
	}
	if err != nil {
		return 0, 0, err
	}
	if code != http.StatusOK {
		return 0, 0, fmt.Errorf("HTTP %d: %s", code, t.c.message(errors.New(string(b))))
	}
	n, maxLen, ok := t.form.count(b)
	if !ok {
		return 0, 0, errTokenizeShape
	}
	return n, maxLen, nil
}

// post sends one request and returns the status and the body (at most MaxBodyBytes). A
// transport error is retried once on a fresh connection (see Tokenize.fresh).
func (t *Tokenize) post(ctx context.Context, body []byte, withKey bool) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, TokenizeTimeout)
	defer cancel()
	if !withKey {
		ctx = withoutSecretHeaders(ctx)
	}
	send := func(hc *http.Client) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if withKey {
			t.c.authorize(req)
		}
		return hc.Do(req)
	}
	resp, err := send(t.hc)
	if err != nil && ctx.Err() == nil {
		resp, err = send(t.fresh)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("openai: tokenize: %s", t.c.message(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, t.c.opts.MaxBodyBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("openai: tokenize: read: %s", t.c.message(err))
	}
	if int64(len(b)) > t.c.opts.MaxBodyBytes {
		return 0, nil, fmt.Errorf("openai: tokenize: answer larger than %d bytes", t.c.opts.MaxBodyBytes)
	}
	return resp.StatusCode, b, nil
}
