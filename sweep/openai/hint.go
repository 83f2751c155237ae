package openai

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
)

// The message of a request the server refused at its door says what to check (DESIGN §7): a
// 404, the path it answered and the base URL likely meant (its /v1); a 401 or 403, whether a
// key was sent and from where (never the key).

// apiPaths are the paths each API posts to under the base URL.
var apiPaths = map[record.API]string{
	record.APIChat: "/chat/completions", record.APICompletions: "/completions", record.APIResponses: "/responses",
	record.APIMessages: "/messages", record.APIEmbeddings: "/embeddings",
}

// statusOf is the HTTP status of a request's error: a non-2xx answer go-openai (or the raw
// protocols) made an error of; 0 for any other error.
func statusOf(err error) int {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		return reqErr.HTTPStatusCode
	}
	return 0
}

// hint is what the message of err adds, "; …", for an answer of 401, 403 (authHint) or 404
// (pathHint; model is the model the request named, "" for the target's); "" otherwise.
func (c *Client) hint(err error, model string) string {
	switch statusOf(err) {
	case 401, 403:
		return "; " + c.authHint()
	case 404:
		if h := c.pathHint(err, model); h != "" {
			return "; " + h
		}
	}
	return ""
}

// pathHint names the request a 404 answered, POST BASE_PATH/chat/completions (the API's path
// under the base URL), and suggests the base URL that ends in /v1 where one is likely meant
// (suggestV1), else asks whether the server serves the API. A 404 whose message quotes the
// model (the request's, model, or the target's) is the model's (vLLM and OpenAI: "The model
// `m` does not exist.", Ollama: "model \"m\" not found", Anthropic: "model: m" unquoted): "".
func (c *Client) pathHint(err error, model string) string {
	msg := err.Error()
	for _, m := range [...]string{model, c.opts.Model} {
		if m != "" && strings.Contains(msg, "model: "+m) {
			return ""
		}
		for _, q := range [...]string{"`", `"`, `\"`, "'"} {
			if m != "" && strings.Contains(msg, q+m+q) {
				return ""
			}
		}
	}
	u, perr := url.Parse(c.opts.BaseURL)
	if perr != nil {
		return ""
	}
	h := "404 for POST " + strings.TrimRight(u.Path, "/") + apiPaths[c.api]
	if s := suggestV1(c.opts.BaseURL); s != "" {
		return h + ": did you mean " + s + "? (target.url, --url: the base URL ends in /v1)"
	}
	return h + " (is " + string(c.api) + " an API it serves, under this base URL? target.api, --api, target.url)"
}

// suggestV1 returns the base URL a 404 suggests, without userinfo or query: base with /v1
// when its path is empty or "/"; its path cut after a /v1 segment (any case) when an API's
// path follows it (".../v1/chat/completions" given as the base); else "" (a gateway's own
// path such as /v1beta/openai or /api/v2 may be right as it is), or when base is not a URL.
func suggestV1(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return ""
	}
	p := strings.TrimRight(u.Path, "/")
	if p != "" {
		i := strings.LastIndex(strings.ToLower(p), "/v1/")
		if i < 0 || !slices.Contains(slices.Collect(maps.Values(apiPaths)), p[i+3:]) {
			return ""
		}
		p = p[:i+3]
	} else {
		p = "/v1"
	}
	return redact.URL((&url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}).String())
}

// authHint says whether the request carried a credential and where it came from: the API key
// (as the API sends it) from Options.KeyFrom, the secret headers by name, or none of them.
func (c *Client) authHint() string {
	var sent []string
	if c.opts.APIKey != "" {
		how := "Authorization: Bearer"
		if c.api == record.APIMessages {
			how = "x-api-key"
		}
		from := ""
		if c.opts.KeyFrom != "" {
			from = " from " + c.opts.KeyFrom
		}
		sent = append(sent, "the API key"+from+" (as "+how+")")
	}
	for _, name := range slices.Sorted(maps.Keys(c.opts.Header)) {
		if redact.SecretHeader(name) && !(c.api == record.APIMessages && strings.EqualFold(name, "x-api-key") && c.opts.APIKey != "") {
			sent = append(sent, "header "+name+" (target.headers, --header)")
		}
	}
	if len(sent) > 0 {
		return "the server refused the credentials sent: " + strings.Join(sent, " and ")
	}
	if c.opts.KeyFrom != "" {
		return "no API key was sent: " + c.opts.KeyFrom + " is unset or empty (set it, or name another variable with --api-key-env)"
	}
	return "no API key was sent (target.api_key_env is empty; --api-key-env NAME reads one)"
}
