package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/sweep/openai"
)

// header is one --header NAME:VALUE.
type header struct{ name, value string }

// headerList is the repeatable --header flag. Set refuses a value without a colon, an empty
// or invalid name, a header the client sets itself, an empty value and a name given twice,
// each in one line that never quotes the value (it may be a secret).
type headerList []header

func (l *headerList) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return errors.New("want NAME:VALUE, such as X-Tenant:acme (the value given has no colon)")
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if name == "" {
		return errors.New("want NAME:VALUE: the header name before the colon is empty")
	}
	if err := openai.CheckHeader(name, value); err != nil {
		return err
	}
	canon := http.CanonicalHeaderKey(name)
	for _, h := range *l {
		if h.name == canon {
			return fmt.Errorf("header %s given twice", canon)
		}
	}
	*l = append(*l, header{canon, value})
	return nil
}

// String lists the names given; the values may be secrets.
func (l *headerList) String() string {
	if l == nil {
		return ""
	}
	var names []string
	for _, h := range *l {
		names = append(names, h.name+":…")
	}
	return strings.Join(names, ",")
}

// apply sets each header in cfg's target.headers, in place of a header of the same name in
// another case, and records that --header set it.
func (l headerList) apply(cfg *config.Config) {
	if len(l) == 0 {
		return
	}
	out := make(map[string]string, len(cfg.Target.Headers)+len(l))
	for name, v := range cfg.Target.Headers {
		out[name] = v
	}
	for _, h := range l {
		for name := range out {
			if http.CanonicalHeaderKey(name) == h.name {
				delete(out, name)
			}
		}
		out[h.name] = h.value
		cfg.Override("target.headers."+h.name, "--header")
	}
	cfg.Target.Headers = out
}

// checkHeaderAuth refuses an Authorization header beside an API key: both authenticate, and
// the header would silently replace the key (or the key the header).
func checkHeaderAuth(e *env, cfg config.Config) error {
	key := apiKey(e, cfg)
	if key == "" || cfg.Target.HTTPHeader().Get("Authorization") == "" {
		return nil
	}
	return usageError("sweep: --header Authorization (or target.headers) and the API key in $%s (target.api_key_env) both authenticate: give one (--api-key-env '' sends no key)",
		cfg.Target.APIKeyEnv)
}

// redactedHeaders refuses a resumed run whose config.yaml lost a secret header's value
// (REDACTED) that --header did not give again.
func redactedHeaders(dir string, cfg config.Config) error {
	for name, v := range cfg.Target.Headers {
		if v == redact.Value && redact.SecretHeader(name) {
			return usageError("sweep: --resume %s: config.yaml holds header %s as %s: give it again with --header '%s:VALUE'",
				dir, name, redact.Value, name)
		}
	}
	return nil
}

// apiKey is the API key the client sends: the variable target.api_key_env names, for an
// endpoint (the simulator takes none).
func apiKey(e *env, cfg config.Config) string {
	if cfg.Target.APIKeyEnv == "" || cfg.Target.URL == "" {
		return ""
	}
	return e.getenv(cfg.Target.APIKeyEnv)
}
