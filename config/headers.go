package config

import (
	"net/http"
	"slices"
	"strings"

	"github.com/kneecap/kneecap/sweep/openai"
)

// headers checks target.headers: each name and value as the client will send them
// (openai.CheckHeader; the value is never quoted, it may be a secret), and no name given twice
// in different case (HTTP names are case-insensitive).
func (v *validation) headers(h map[string]string) {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	seen := map[string]string{}
	for _, name := range names {
		key := "target.headers." + name
		if err := openai.CheckHeader(name, h[name]); err != nil {
			v.bad(key, "%v", err)
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if first, ok := seen[canon]; ok {
			v.bad(key, "the same header as %s (header names ignore case): give it once", first)
			continue
		}
		seen[canon] = name
	}
}

// HTTPHeader returns target.headers as an http.Header with canonical names.
func (t TargetConfig) HTTPHeader() http.Header {
	if len(t.Headers) == 0 {
		return nil
	}
	out := make(http.Header, len(t.Headers))
	for name, v := range t.Headers {
		out.Set(strings.TrimSpace(name), v)
	}
	return out
}
