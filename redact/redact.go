// Package redact is kneecap's one scrubber of secrets: URLs lose their userinfo and
// secret-looking query parameters, decoded YAML or JSON loses the values under secret-looking
// keys, and free text loses the secrets it was given in every form a message may carry them
// (plain, percent-encoded, JSON-escaped, base64, base64 of "Bearer KEY", base64 of a longer
// text holding them; see Secrets), and the userinfo and secret query values of the URLs in
// it. Everything kneecap prints or writes that may hold a URL, a request body or a server's
// message passes through it: the client's error messages, records.jsonl, levels.json,
// server_info.json, stdout and stderr of a sweep, and every error it returns.
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

// URLWithoutQuery drops the userinfo, the whole query and the fragment of raw, for messages
// about a URL whose query has no business being there; a string that does not parse is
// "<unparseable>".
func URLWithoutQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable>"
	}
	u.User = nil
	u.RawQuery, u.ForceQuery = "", false
	u.Fragment, u.RawFragment = "", ""
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
var urlUserinfo = regexp.MustCompile(`://[^/@\s"'<>]+@`)

// Userinfo replaces the user:password of every URL in free text s by Value
// ("https://u:p@host" becomes "https://REDACTED@host").
func Userinfo(s string) string {
	return urlUserinfo.ReplaceAllString(s, "://"+Value+"@")
}

// queryParam matches a name=value pair of a query string in free text (after '?', '&', ';'
// or a space): the value runs to the next '&', '#', space or quote.
var queryParam = regexp.MustCompile(`(^|[?&;\s])([A-Za-z0-9_.\-]+)=([^&#\s"'<>]*)`)

// query replaces the value of every name=value pair in free text s whose name SecretKey
// reports by Value ("…/v1?api_key=sk-1&model=m" becomes "…/v1?api_key=REDACTED&model=m").
func query(s string) string {
	if !strings.Contains(s, "=") {
		return s
	}
	return queryParam.ReplaceAllStringFunc(s, func(m string) string {
		sub := queryParam.FindStringSubmatch(m)
		if !SecretKey(sub[2]) || sub[3] == Value {
			return m
		}
		return sub[1] + sub[2] + "=" + Value
	})
}

// Text is the one redaction of free text (an error message, a server's body, a line printed):
// every form of each secret (see Secrets) is replaced by Marker, then the userinfo of every
// URL and the value of every secret-looking query parameter by Value. Secrets shorter than
// minSecret bytes are ignored.
func Text(s string, secrets ...string) string {
	return NewSecrets(secrets...).Text(s)
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
