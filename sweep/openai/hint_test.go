package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// TestSuggestV1: the base URL a 404 suggests ends in /v1: appended to an empty path, or cut
// after a /v1 segment (any case) that an API's path follows; none when the path is anything
// else (a gateway's own, an Azure deployment's, the endpoint itself without /v1) or ends in
// /v1 already; never with userinfo or a query.
func TestSuggestV1(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://host:8000":                                "http://host:8000/v1",
		"http://host:8000/":                               "http://host:8000/v1",
		"http://host:8000/v1":                             "",
		"http://host:8000/v1/":                            "",
		"http://host:8000/V1":                             "",
		"http://host:8000/v1/chat/completions":            "http://host:8000/v1",
		"http://host:8000/V1/messages/":                   "http://host:8000/V1",
		"https://user:KEY@gw.example/api/v1/embeddings?q": "https://gw.example/api/v1",
		"https://gw.example/openai":                       "",
		"https://gw.example/v1beta/openai":                "",
		"https://gw.example/api/v2":                       "",
		"https://x.openai.azure.com/openai/deployments/d": "",
		"https://gw.example/api/v1/x":                     "",
		"http://host:8000/chat/completions":               "", // the endpoint without /v1: a gateway's path for all it shows
		"not a url":                                       "",
	} {
		if got := suggestV1(in); got != want {
			t.Errorf("suggestV1(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStatusHints: a request refused with 404 names the path it posted to and, when the base
// URL likely lacks its /v1, suggests the URL with it (a 404 naming the model, the target's or
// the request's own, quoted or after Anthropic's "model: ", is the model's, without the
// hint); one refused with 401 or 403 says whether a key was sent and where it came from, by
// name — never the key.
func TestStatusHints(t *testing.T) {
	t.Parallel()
	const key = "sk-hint-SECRET-0001"
	routes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/nokey/v1/chat/completions" && r.Header.Get("Authorization") == "" && r.Header.Get("X-Api-Key") == "":
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"missing key","type":"auth","code":401}}`)
		case strings.HasPrefix(r.URL.Path, "/nokey/"):
			w.WriteHeader(403)
			io.WriteString(w, "forbidden")
		case r.URL.Path == "/anthropic/v1/messages":
			w.WriteHeader(404)
			io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"model: m"}}`)
		case r.URL.Path == "/v1/chat/completions":
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"message":"The model `+"`m`"+` does not exist.","type":"NotFoundError","code":404}}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"detail":"Not Found"}`)
		}
	})
	srv := httptest.NewServer(routes)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, base string
		mod        func(*Options)
		want, not  string
	}{
		{"no /v1", srv.URL, nil,
			"; 404 for POST /chat/completions: did you mean " + srv.URL + "/v1? (target.url, --url: the base URL ends in /v1)", ""},
		{"the endpoint in the URL", srv.URL + "/v1/chat/completions", nil,
			"; 404 for POST /v1/chat/completions/chat/completions: did you mean " + srv.URL + "/v1?", ""},
		{"/v1 but another API", srv.URL + "/v1", func(o *Options) { o.API = record.APIResponses },
			"; 404 for POST /v1/responses (is responses an API it serves, under this base URL? target.api, --api, target.url)", ""},
		{"a gateway's path", srv.URL + "/v1beta/openai", nil,
			"; 404 for POST /v1beta/openai/chat/completions (is chat an API it serves", "did you mean"},
		{"the model's 404", srv.URL + "/v1", nil, "does not exist.", "404 for"},
		// Anthropic names the model unquoted.
		{"Anthropic's model 404", srv.URL + "/anthropic/v1", func(o *Options) { o.API = record.APIMessages }, "model: m", "404 for"},
		{"no key", srv.URL + "/nokey/v1", func(o *Options) { o.KeyFrom = "$OPENAI_API_KEY (target.api_key_env's default for api chat)" },
			"; no API key was sent: $OPENAI_API_KEY (target.api_key_env's default for api chat) is unset or empty (set it, or name another variable with --api-key-env)", ""},
		{"no variable", srv.URL + "/nokey/v1", nil, "; no API key was sent (target.api_key_env is empty; --api-key-env NAME reads one)", ""},
		{"a key refused", srv.URL + "/nokey/v1", func(o *Options) { o.APIKey, o.KeyFrom = key, "$MY_KEY (--api-key-env)" },
			"; the server refused the credentials sent: the API key from $MY_KEY (--api-key-env) (as Authorization: Bearer)", key},
		// New puts the Messages key in the x-api-key header (and refuses one given beside it):
		// the hint names the key, not that header.
		{"messages key", srv.URL + "/nokey/v1", func(o *Options) { o.API, o.APIKey, o.KeyFrom = record.APIMessages, key, "$ANTHROPIC_API_KEY" },
			"refused the credentials sent: the API key from $ANTHROPIC_API_KEY (as x-api-key)", "header X-Api-Key"},
		{"chat key, x-api-key header", srv.URL + "/nokey/v1", func(o *Options) {
			o.APIKey, o.KeyFrom, o.Header = key, "$OPENAI_API_KEY", http.Header{"X-Api-Key": {key}}
		}, "the API key from $OPENAI_API_KEY (as Authorization: Bearer) and header X-Api-Key (target.headers, --header)", key},
		{"a secret header", srv.URL + "/nokey/v1", func(o *Options) { o.Header = http.Header{"X-Tenant": {"a"}, "X-Api-Token": {key}} },
			"refused the credentials sent: header X-Api-Token (target.headers, --header)", "X-Tenant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, srv.URL, func(o *Options) {
				o.BaseURL = tc.base
				if tc.mod != nil {
					tc.mod(o)
				}
			})
			var rec record.Record
			c.Do(context.Background(), &record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 2}, &rec)
			if rec.ErrorClass != record.ErrHTTP4xx || !strings.Contains(rec.Error, tc.want) || (tc.not != "" && strings.Contains(rec.Error, tc.not)) {
				t.Errorf("%s %q\nwant http_4xx with %q, without %q", rec.ErrorClass, rec.Error, tc.want, tc.not)
			}
		})
	}
	// A request of workload.models names its own model (a LoRA adapter): a 404 quoting it is
	// the model's too.
	t.Run("the request's model's 404", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, srv.URL, func(o *Options) { o.BaseURL, o.Model = srv.URL+"/v1", "base" })
		var rec record.Record
		c.Do(context.Background(), &record.Request{Model: "m", Prompt: "x", PromptTokens: 1, MaxTokens: 2}, &rec)
		if rec.ErrorClass != record.ErrHTTP4xx || !strings.Contains(rec.Error, "does not exist.") || strings.Contains(rec.Error, "404 for") {
			t.Errorf("%s %q\nwant http_4xx, the model's message without a path's hint", rec.ErrorClass, rec.Error)
		}
	})
}
