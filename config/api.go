package config

import (
	"strings"

	"github.com/kneecap/kneecap/record"
)

// targetAPIs are the values of target.api: the token streams (DESIGN §3.11) and embeddings
// (§4.17).
var targetAPIs = []record.API{record.APIChat, record.APICompletions, record.APIResponses, record.APIMessages, record.APIEmbeddings}

// apiNames lists apis for an error message: "chat, completions, responses or messages".
func apiNames(apis []record.API) string {
	names := make([]string, len(apis))
	for i, a := range apis {
		names[i] = string(a)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// DefaultAPIKeyEnv is target.api_key_env's default for api: ANTHROPIC_API_KEY for the
// Messages API, whose key goes in x-api-key, else OPENAI_API_KEY. The sweep does not warn of
// it unset, whoever named it.
func DefaultAPIKeyEnv(api record.API) string {
	if api == record.APIMessages {
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

// isEnvName reports whether name is an environment variable's name: [A-Za-z_][A-Za-z0-9_]*.
// Anything else given for target.api_key_env is most likely the key itself (sk-proj-…).
func isEnvName(name string) bool {
	for i, r := range name {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return name != ""
}

// DefaultKeyEnv sets target.api_key_env to its API's default (DefaultAPIKeyEnv) unless the
// file or a flag set it. Call it once target.api is final (after the flags).
func (c *Config) DefaultKeyEnv() {
	if !c.given("target.api_key_env") {
		c.Target.APIKeyEnv = DefaultAPIKeyEnv(c.Target.API)
	}
}

// UnforcedLengths says why the workload's fixed output lengths (workload.fixed_output) could
// not be asked for, "" when they could: the Messages API has no ignore_eos (DESIGN §3.11). The
// sweep prints it and the analysis warns it.
func (c Config) UnforcedLengths() string {
	if !c.Workload.FixedOutput || c.Target.API != record.APIMessages {
		return ""
	}
	return "output length: target.api messages has no ignore_eos (neither Anthropic's Messages API nor vLLM's /v1/messages accepts it, nor min_tokens): max_tokens is a cap the model may stop short of, so the output lengths were not forced (fixed_output false)"
}
