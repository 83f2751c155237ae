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

// keyEnv is the variable the API key is read from: target.api_key_env, for an endpoint; ""
// when no key is read (the simulator takes none, or target.api_key_env is empty).
func (s *Sweep) keyEnv() string {
	if s.Cfg.Target.URL == "" {
		return ""
	}
	return s.Cfg.Target.APIKeyEnv
}

// apiKey is the API key the client sends: the variable keyEnv names, "" when none.
func (s *Sweep) apiKey() string {
	if name := s.keyEnv(); name != "" {
		return s.Getenv(name)
	}
	return ""
}

// keyFrom names the variable the API key is read from and what chose it: "$OPENAI_API_KEY
// (target.api_key_env's default for api chat)", "$MY_KEY (--api-key-env)" or "$MY_KEY
// (target.api_key_env, FILE:LINE)"; "" when no key is read (the simulator, or an empty
// target.api_key_env).
func (s *Sweep) keyFrom() string {
	cfg := &s.Cfg
	name := s.keyEnv()
	if name == "" {
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
	if name := s.keyEnv(); name == "" || s.Getenv(name) != "" || name == config.DefaultAPIKeyEnv(cfg.Target.API) {
		return
	}
	fmt.Fprintf(s.Log, "kneecap: warning: %s is unset or empty: no API key will be sent to %s (export it, or give --api-key-env '' to send none on purpose)\n",
		s.keyFrom(), redact.URL(cfg.Target.URL))
}
