// Package redact is kneecap's one scrubber of secrets: URLs lose their userinfo and
// secret-looking query parameters, decoded YAML or JSON loses the values under secret-looking
// keys, and free text loses the literal secrets it was given. Everything kneecap prints or
// writes that may hold a URL, a request body or a server's message passes through it.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Value replaces a secret value in a file kneecap writes (config.yaml, server_info.json).
const Value = "REDACTED"

// Marker replaces a secret inside free text (error messages, records.jsonl).
const Marker = "[REDACTED]"

// URL drops the userinfo of raw and replaces the value of every query parameter whose name
// SecretKey reports by Value. A string that does not parse loses everything before its last
// '@'.
func URL(raw string) string {
	if raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.LastIndexByte(raw, '@'); i >= 0 {
			return Value + "@" + raw[i+1:]
		}
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if SecretKey(k) {
				q.Set(k, Value)
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// URLWithoutQuery drops the userinfo and the whole query of raw, for messages about a URL
// whose query has no business being there; a string that does not parse is "<unparseable>".
func URLWithoutQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable>"
	}
	u.User = nil
	u.RawQuery, u.ForceQuery = "", false
	return u.String()
}

// Tree deep-copies v (decoded YAML or JSON: maps of string keys, slices, scalars): a value
// under a key that secret reports is replaced by Value, and a string elsewhere by str's
// result (kept as it is when str is nil).
func Tree(v any, secret func(string) bool, str func(string) any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if secret(k) {
				out[k] = Value
			} else {
				out[k] = Tree(e, secret, str)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Tree(e, secret, str)
		}
		return out
	case string:
		if str != nil {
			return str(x)
		}
	}
	return v
}

// urlUserinfo matches the user:password part of a URL in free text.
var urlUserinfo = regexp.MustCompile(`://[^/@\s"]+@`)

// Userinfo replaces the user:password of every URL in free text s by Value
// ("https://u:p@host" becomes "https://REDACTED@host").
func Userinfo(s string) string {
	return urlUserinfo.ReplaceAllString(s, "://"+Value+"@")
}

// Text replaces every occurrence of each non-empty secret in s by Marker.
func Text(s string, secrets ...string) string {
	for _, k := range secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, Marker)
		}
	}
	return s
}

// SecretKey reports whether a key looks like it holds a credential: api_key, apikey,
// authorization, secret, password, passwd, credential, bearer, cookie, or a token ("token",
// "auth_token", "x-token", but not "max_tokens" or "stop_token_ids").
func SecretKey(k string) bool {
	k = strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for _, s := range []string{"api_key", "apikey", "authorization", "secret", "password", "passwd", "credential", "bearer", "cookie"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return k == "token" || strings.HasSuffix(k, "_token") || strings.HasPrefix(k, "token_") ||
		strings.HasSuffix(k, "accesstoken") || strings.HasSuffix(k, "authtoken")
}
