package launch

import (
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/redact"
)

// Where the API key comes from, said by name and never by value (DESIGN §7): in the message
// of a 401 or 403 (openai.Options.KeyFrom), and in a warning before the preflight when the
// variable the user named holds nothing.

// keyEnvKey is the configuration key naming the API key's variable.
const keyEnvKey = "target.api_key_env"

// keyFrom names the variable the API key is read from and what chose it: "$OPENAI_API_KEY
// (target.api_key_env's default for api chat)", "$MY_KEY (--api-key-env)" or "$MY_KEY
// (target.api_key_env, FILE:LINE)"; "" when no key is read (the simulator, or an empty
// target.api_key_env).
func (s *Sweep) keyFrom() string {
	cfg := &s.Cfg
	name := cfg.Target.APIKeyEnv
	if name == "" || cfg.Target.URL == "" {
		return ""
	}
	switch o := cfg.Origin(keyEnvKey); {
	case o == "":
		return fmt.Sprintf("$%s (%s's default for api %s)", name, keyEnvKey, cfg.Target.API)
	case strings.HasPrefix(o, "--"):
		return fmt.Sprintf("$%s (%s)", name, o)
	default:
		return fmt.Sprintf("$%s (%s, %s)", name, keyEnvKey, o)
	}
}

// warnKeyEnv warns, before the preflight, of a variable the user named for the API key
// (--api-key-env or target.api_key_env) that is unset or empty: no key will be sent. The
// API's default variable is not warned of, even named (the examples name OPENAI_API_KEY): a
// server without authentication needs none.
func (s *Sweep) warnKeyEnv() {
	cfg := &s.Cfg
	if s.apiKey() != "" || cfg.Target.APIKeyEnv == "" || cfg.Target.URL == "" || cfg.Target.APIKeyEnv == config.DefaultAPIKeyEnv(cfg.Target.API) {
		return
	}
	fmt.Fprintf(s.Log, "kneecap: warning: %s is unset or empty: no API key will be sent to %s (export it, or give --api-key-env '' to send none on purpose)\n",
		s.keyFrom(), redact.URL(cfg.Target.URL))
}
