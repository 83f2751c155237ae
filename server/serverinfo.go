package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
)

// ServerInfoPaths are the info endpoints probed before a sweep, relative to the server's root
// (the base URL without /v1), in the order their answers are trusted: SGLang, TGI, llama.cpp,
// Ollama, vLLM. A server answers the few it has; an OpenAI-style API usually none.
var ServerInfoPaths = []string{"/get_server_info", "/info", "/props", "/api/version", "/version"}

// MaxServerInfoBody is the largest info body kept, in bytes (SGLang's holds every server
// argument: a few KiB).
const MaxServerInfoBody = 256 << 10

// IdentifyServer reads the info bodies a server answered (by path of ServerInfoPaths) and
// returns what they say, trusting the paths in ServerInfoPaths order; nil when no body is a
// JSON object of the shape its engine answers (a catch-all server that answers every path
// with the same page is not mistaken for one).
func IdentifyServer(bodies map[string][]byte) *record.ServerInfo {
	same := map[string]int{}
	for _, b := range bodies {
		same[string(b)]++
	}
	for _, path := range ServerInfoPaths {
		b, ok := bodies[path]
		if !ok || same[string(b)] > 1 {
			continue // a catch-all answers several paths with the same body
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		if info := identify(path, m); info != nil {
			info.From = "GET " + path
			return info
		}
	}
	return nil
}

// identify recognises one engine's info body.
func identify(path string, m map[string]any) *record.ServerInfo {
	str := func(key string) string {
		switch v := m[key].(type) {
		case string:
			return clip(v)
		case float64:
			return clip(strconv.FormatFloat(v, 'g', 12, 64))
		case bool:
			return strconv.FormatBool(v)
		}
		return ""
	}
	settings := func(keys ...string) map[string]string {
		out := map[string]string{}
		for _, k := range keys {
			if v := str(k); v != "" {
				out[k] = v
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	switch path {
	case "/get_server_info":
		// SGLang: every server argument, the scheduler's limits and "version".
		if _, ok := m["model_path"]; !ok {
			return nil
		}
		return &record.ServerInfo{Engine: "SGLang", Version: str("version"),
			Settings: settings("max_running_requests", "max_total_num_tokens", "chunked_prefill_size", "tp_size", "stream_interval", "context_length")}
	case "/info":
		// TGI: model_id, version and the router's limits.
		if str("model_id") == "" || str("max_concurrent_requests") == "" {
			return nil
		}
		return &record.ServerInfo{Engine: "TGI", Version: str("version"),
			Settings: settings("max_concurrent_requests", "max_batch_total_tokens", "max_batch_prefill_tokens")}
	case "/props":
		// llama.cpp: the server's slots (-np) and its build.
		if _, ok := m["total_slots"]; !ok {
			if _, ok := m["default_generation_settings"]; !ok {
				return nil
			}
		}
		return &record.ServerInfo{Engine: "llama.cpp", Version: str("build_info"), Settings: settings("total_slots")}
	case "/api/version":
		// Ollama answers {"version": …} and nothing else.
		if str("version") == "" || len(m) != 1 {
			return nil
		}
		return &record.ServerInfo{Engine: "Ollama", Version: str("version")}
	case "/version":
		v := str("version")
		if v == "" {
			return nil
		}
		if rest, ok := strings.CutPrefix(v, SimEngine); ok {
			return &record.ServerInfo{Engine: SimEngine, Version: strings.TrimSpace(rest), Settings: settings("max_num_seqs", "tokens_per_chunk", "max_model_len")}
		}
		// vLLM answers {"version": …} and nothing else; a gateway's status page has more.
		if len(m) != 1 {
			return nil
		}
		return &record.ServerInfo{Engine: "vLLM", Version: v}
	}
	return nil
}

// clip makes a server-given string fit for a report line: control characters dropped, at
// most 64 runes (a hostile or odd server must not fill the report).
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) { // C0, C1, bidi overrides
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 64 {
		s = string(r[:63]) + "…"
	}
	return strings.TrimSpace(s)
}

// SimEngine is the engine name of kneecap's simulator; its GET /version answers
// {"version": "kneecap-sim …"} (vLLM's endpoint and shape).
const SimEngine = "kneecap-sim"

// RedactServerInfo returns the info bodies as one JSON document for the results directory's
// server_info.json. Each body is parsed and, at any depth, loses the values under keys that
// may name a secret (infoSecret: a key mentioning key, secret, password, auth, credential,
// cookie or bearer, or a token that is not one of a vocabulary's: an info body is not worth a
// leak), the user:password of URLs, and secrets inside string values that are JSON
// themselves; a body that is not JSON is kept as a string cut to 4 KiB, or replaced whole
// when it mentions such a word. The caller removes the literal API key first (the probe
// does).
func RedactServerInfo(bodies map[string][]byte) ([]byte, error) {
	doc := map[string]any{}
	for path, b := range bodies {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			s := string(b)
			if len(s) > 4<<10 {
				s = s[:4<<10]
			}
			doc[path] = redactText(s)
			continue
		}
		doc[path] = redactInfo(v, 0)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("server info: %w", err)
	}
	return append(out, '\n'), nil
}

// redactText hides a non-JSON body that mentions a secret-looking word: it cannot be
// redacted key by key.
func redactText(s string) string {
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r == '_' || r == '-')
	}) {
		if infoSecret(w) {
			return redact.Value
		}
	}
	return redact.Userinfo(s)
}

// infoSecret reports whether an info body's key may name a secret, keyed on its words
// (split at non-letters and camelCase): any key mentioning key, secret, passw, auth (not
// author), credential, cookie or bearer, since nothing in an info body is worth a leak; and
// a key with the word "token" (token, hf_token, access_token, id_token, hfToken) unless it
// names a token of the model's vocabulary: a special token (bos_token, eos_token, pad_token,
// next_token, has_next_token) or a token's id (token_id, eos_token_ids). Token counts and
// tokenizer settings (max_total_num_tokens, tokenizer_path) have no word "token".
func infoSecret(k string) bool {
	words := keyWords(k)
	for _, w := range words {
		if w == "author" || w == "authors" {
			continue // a model card's, not a credential (authorization is one)
		}
		for _, s := range []string{"key", "secret", "passw", "auth", "credential", "cookie", "bearer"} {
			if strings.Contains(w, s) {
				return true
			}
		}
	}
	for i, w := range words {
		if w != "token" {
			continue
		}
		vocab := i > 0 && slices.Contains(vocabularyTokens, words[i-1]) ||
			i+1 < len(words) && (words[i+1] == "id" || words[i+1] == "ids")
		if !vocab {
			return true
		}
	}
	return false
}

// vocabularyTokens are the words naming a tokenizer's special tokens before "token"
// (bos_token: "<s>"; llama.cpp's /props lists them, and its slots' next_token).
var vocabularyTokens = []string{"bos", "eos", "eot", "eom", "pad", "unk", "sep", "cls", "mask", "next",
	"start", "end", "stop", "begin", "image", "audio", "video", "think", "fim"}

// keyWords splits a JSON key into lowercase words at every character that is not a letter or
// digit and before an upper-case letter that follows a lower-case one: "hfToken" and
// "hf-token" are [hf token].
func keyWords(k string) []string {
	var words []string
	var b strings.Builder
	prevLower := false
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for _, r := range k {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = unicode.IsLower(r)
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return words
}

// redactInfo deep-copies an info body's value with secrets removed (see RedactServerInfo);
// depth counts JSON documents nested in strings.
func redactInfo(v any, depth int) any {
	return redact.Tree(v, infoSecret, func(x string) any {
		t := strings.TrimSpace(x)
		if depth < 8 && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) {
			var inner any
			if json.Unmarshal([]byte(t), &inner) == nil {
				if b, err := json.Marshal(redactInfo(inner, depth+1)); err == nil {
					return string(b)
				}
			}
		}
		return redact.Userinfo(x)
	})
}
