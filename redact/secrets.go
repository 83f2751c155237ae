package redact

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// minSecret is the shortest secret Secrets looks for, in bytes: replacing a shorter string
// everywhere would garble every message, and a secret that short is no secret.
const minSecret = 4

// minCore is the shortest base64 core (see Secrets) searched for, in characters: a shorter
// one would match ordinary text.
const minCore = 8

// Secrets is the set of literal secrets of a run (the API key, a URL's password, secret
// extra_body values) in every form a message may carry them: as they are; percent-encoded
// (query and path escaping, either case of hex); JSON-escaped; base64 in the standard and
// URL alphabets, padded or not, of the secret and of "Bearer SECRET" (an echoed
// Authorization header); and base64 of the secret at any offset inside a longer base64 text
// (an echoed Basic credential "user:SECRET", a base64 JSON body), which replaces the whole
// base64 run that holds it. A nil *Secrets holds none. It is immutable and safe for
// concurrent use.
type Secrets struct {
	values []string
	forms  []string // exact forms, longest first
	cores  []string // base64 of each secret at offsets 0, 1 and 2 of a 3-byte group
}

// NewSecrets returns the set of the given secrets; empty ones and those shorter than
// minSecret are ignored.
func NewSecrets(values ...string) *Secrets {
	s := &Secrets{}
	seen := map[string]bool{}
	add := func(dst *[]string, f string) {
		if len(f) >= minSecret && !seen[f] {
			seen[f] = true
			*dst = append(*dst, f)
		}
	}
	for _, v := range values {
		if len(v) < minSecret {
			continue
		}
		s.values = append(s.values, v)
		for _, f := range exactForms(v) {
			add(&s.forms, f)
		}
		for _, c := range base64Cores(v) {
			if len(c) >= minCore {
				add(&s.cores, c)
			}
		}
	}
	sort.SliceStable(s.forms, func(i, j int) bool { return len(s.forms[i]) > len(s.forms[j]) })
	return s
}

// With returns a set holding s's secrets and values.
func (s *Secrets) With(values ...string) *Secrets {
	if s == nil {
		return NewSecrets(values...)
	}
	return NewSecrets(append(append([]string(nil), s.values...), values...)...)
}

// exactForms are the forms of v searched for as they are.
func exactForms(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(v, "/", `\/`)}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	for _, f := range out[1:3] {
		out = append(out, lowerHex(f))
	}
	for _, p := range []string{v, "Bearer " + v} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(p)))
		}
	}
	return out
}

var upperHex = regexp.MustCompile(`%[0-9A-F]{2}`)

// lowerHex writes the percent escapes of s in lower case (%2f, as some encoders do).
func lowerHex(s string) string { return upperHex.ReplaceAllStringFunc(s, strings.ToLower) }

// base64Cores returns, for each offset o of v inside a 3-byte group of a longer text, the
// base64 characters that v's bytes alone determine, in both alphabets: base64 of the text
// holds one of them wherever v stands in it.
func base64Cores(v string) []string {
	var out []string
	for _, skip := range []int{0, 2, 1} { // offsets 0, 1, 2: the bytes v loses to the group it starts in
		if skip > len(v) {
			continue
		}
		b := []byte(v[skip:])
		b = b[:len(b)/3*3]
		if len(b) == 0 {
			continue
		}
		out = append(out, base64.RawStdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b))
	}
	return out
}

// Text returns text with every form of every secret replaced by Marker, then the userinfo of
// every URL and every secret-looking query value replaced by Value (Userinfo, Query).
func (s *Secrets) Text(text string) string {
	if s != nil {
		for _, f := range s.forms {
			if strings.Contains(text, f) {
				text = strings.ReplaceAll(text, f, Marker)
			}
		}
		for _, c := range s.cores {
			text = replaceRuns(text, c)
		}
	}
	return query(Userinfo(text))
}

// replaceRuns replaces every run of base64 characters that holds core by Marker.
func replaceRuns(text, core string) string {
	for {
		i := strings.Index(text, core)
		if i < 0 {
			return text
		}
		l, r := i, i+len(core)
		for l > 0 && isBase64(text[l-1]) {
			l--
		}
		for r < len(text) && isBase64(text[r]) {
			r++
		}
		text = text[:l] + Marker + text[r:]
	}
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}

// Bytes is Text for a document kneecap writes (levels.json, server_info.json). Marker and
// Value hold no JSON syntax, and no form crosses a quote, so JSON stays JSON.
func (s *Secrets) Bytes(b []byte) []byte { return []byte(s.Text(string(b))) }

// Error returns err with its message passed through Text; errors.Is and errors.As see err's
// chain as before. A nil err is nil.
func (s *Secrets) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: s.Text(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns a writer that passes every Write through Text before w. Each Write is
// redacted on its own: a caller writes a line (or more) at a time, as fmt.Fprintf does.
func (s *Secrets) Writer(w io.Writer) io.Writer { return &writer{s: s, w: w} }

type writer struct {
	s *Secrets
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.s.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// URLSecrets returns the secrets a URL carries, for NewSecrets: its password and
// "user:password" (sent as a Basic credential), or its user name when it has no password,
// and the values of its query parameters whose names SecretKey reports.
func URLSecrets(raw string) []string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		name := u.User.Username()
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw, name+":"+pw)
		} else {
			out = append(out, name)
		}
	}
	for k, vs := range u.Query() {
		if SecretKey(k) {
			out = append(out, vs...)
		}
	}
	return out
}

// TreeSecrets returns the string values under keys that secret reports in v (decoded YAML
// or JSON), at any depth: the secrets an extra_body sends.
func TreeSecrets(v any, secret func(string) bool) []string {
	var out []string
	var walk func(v any, under bool)
	walk = func(v any, under bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, under || secret(k))
			}
		case []any:
			for _, e := range x {
				walk(e, under)
			}
		case string:
			if under {
				out = append(out, x)
			}
		}
	}
	walk(v, false)
	sort.Strings(out)
	return out
}
