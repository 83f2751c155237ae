package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
)

// clientHeaders are the headers the client or net/http writes itself, which Options.Header
// may not set: Host and the framing (Content-Length, Transfer-Encoding, the hop-by-hop
// headers), and Content-Type, Accept and Accept-Encoding, on which the JSON body, the stream
// detection and the raw (uncompressed) chunks depend.
var clientHeaders = map[string]string{
	"Host":              "net/http sets it from the URL",
	"Content-Length":    "net/http sets it from the body",
	"Transfer-Encoding": "net/http frames the body",
	"Connection":        "a hop-by-hop header net/http manages",
	"Keep-Alive":        "a hop-by-hop header net/http manages",
	"Proxy-Connection":  "a hop-by-hop header net/http manages",
	"Te":                "a hop-by-hop header net/http manages",
	"Trailer":           "a hop-by-hop header net/http manages",
	"Upgrade":           "a hop-by-hop header net/http manages",
	"Content-Type":      "the client sends JSON",
	"Accept":            "the client detects the stream by it",
	"Accept-Encoding":   "token timing needs uncompressed chunks",
}

// CheckHeader reports why a header of name and value cannot be sent on every request, or nil:
// name must be a token (RFC 9110 §5.1, as net/http's httpguts.ValidHeaderFieldName), not one
// of the headers the client sets itself, and value non-empty with no control character but
// tab (httpguts.ValidHeaderFieldValue). Authorization is allowed; New refuses it beside an
// API key. The value is never quoted: it may be a secret.
func CheckHeader(name, value string) error {
	switch {
	case name == "":
		return errors.New("empty header name")
	case strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0:
		return fmt.Errorf("header name %q: not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
	}
	canon := http.CanonicalHeaderKey(name)
	if why, ok := clientHeaders[canon]; ok {
		return fmt.Errorf("header %s: cannot be set (%s)", canon, why)
	}
	if strings.TrimSpace(value) == "" {
		return fmt.Errorf("header %s: empty value", canon)
	}
	if strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return fmt.Errorf("header %s: the value holds a control character (a newline?)", canon)
	}
	return nil
}

// isTokenChar reports whether r may stand in an HTTP token.
func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// checkHeaders checks every header of h (CheckHeader), and Authorization beside an API key.
func checkHeaders(h http.Header, apiKey string) error {
	for name, vs := range h {
		for _, v := range vs {
			if err := CheckHeader(name, v); err != nil {
				return err
			}
		}
	}
	if h.Get("Authorization") != "" && apiKey != "" {
		return errors.New("header Authorization: conflicts with the API key (send one or the other)")
	}
	return nil
}

// noSecretHeaders marks a request context whose request goes without the secret headers of
// Options.Header (redact.SecretHeader), as it goes without the API key: a probe of the
// server's root, which may be another service behind a path-routed gateway.
type noSecretHeaders struct{}

// withoutSecretHeaders returns ctx marked so (see noSecretHeaders).
func withoutSecretHeaders(ctx context.Context) context.Context {
	return context.WithValue(ctx, noSecretHeaders{}, true)
}

// headerTransport adds Options.Header to every request for the base URL's origin (scheme,
// host and port) and to no other: a redirect the policy would follow elsewhere, or any other
// request through the transport, goes without them (DESIGN §7). net/http copies the first
// request's headers onto a redirect's, so the headers are added here, on a clone, never on
// the caller's request.
type headerTransport struct {
	base   http.RoundTripper
	origin *url.URL
	header http.Header
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) == 0 || !sameOrigin(req.URL, t.origin) {
		return t.base.RoundTrip(req)
	}
	omit, _ := req.Context().Value(noSecretHeaders{}).(bool)
	out := req.Clone(req.Context())
	for name, vs := range t.header {
		if omit && redact.SecretHeader(name) {
			continue
		}
		out.Header[name] = vs
	}
	return t.base.RoundTrip(out)
}

// secretHeaders reports whether h holds a header redact.SecretHeader reports.
func secretHeaders(h http.Header) bool {
	for name := range h {
		if redact.SecretHeader(name) {
			return true
		}
	}
	return false
}

// canonicalHeader returns h with canonical names (nil for no header), after checkHeaders.
func canonicalHeader(h http.Header, apiKey string) (http.Header, error) {
	if len(h) == 0 {
		return nil, nil
	}
	out := make(http.Header, len(h))
	for name, vs := range h {
		canon := http.CanonicalHeaderKey(name)
		out[canon] = append(out[canon], vs...)
	}
	if err := checkHeaders(out, apiKey); err != nil {
		return nil, err
	}
	return out, nil
}

// credentials returns the API key and the secrets of h's secret headers
// (redact.HeaderSecrets), the non-empty ones.
func credentials(apiKey string, h http.Header) []string {
	var out []string
	if apiKey != "" {
		out = append(out, apiKey)
	}
	for name, vs := range h {
		if redact.SecretHeader(name) {
			for _, v := range vs {
				out = append(out, redact.HeaderSecrets(v)...)
			}
		}
	}
	return out
}

// authorize sets on req the credential the API's protocol sends beside the header transport's:
// the API key as "Authorization: Bearer" (as go-openai sends it), and nothing for the Messages
// API, whose key the transport adds as x-api-key (messagesHeader). Every request kneecap builds
// itself (stream, /tokenize, server-info probes) sends the key through here.
func (c *Client) authorize(req *http.Request) {
	if c.api != record.APIMessages && c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
}
