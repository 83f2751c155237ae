package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// TestDefaultKeyEnv: target.api_key_env defaults per API (ANTHROPIC_API_KEY for messages,
// OPENAI_API_KEY otherwise) and a value the file or a flag gives is kept, even the default of
// another API, and even "" (no key).
func TestDefaultKeyEnv(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		flag       *string // --api-key-env, when given
		want       string
	}{
		{"messages", "target:\n  api: messages\n", nil, "ANTHROPIC_API_KEY"},
		{"responses", "target:\n  api: responses\n", nil, "OPENAI_API_KEY"},
		{"chat", "name: x\n", nil, "OPENAI_API_KEY"},
		{"messages, file's", "target:\n  api: messages\n  api_key_env: OPENAI_API_KEY\n", nil, "OPENAI_API_KEY"},
		{"messages, flag's", "target:\n  api: messages\n", new("MY_KEY"), "MY_KEY"},
		{"messages, no key", "target:\n  api: messages\n", new(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.flag != nil {
				c.Target.APIKeyEnv = *tc.flag
				c.Override("target.api_key_env", "--api-key-env")
			}
			c.DefaultKeyEnv()
			if c.Target.APIKeyEnv != tc.want {
				t.Errorf("api_key_env %q, want %q", c.Target.APIKeyEnv, tc.want)
			}
		})
	}
	if got := DefaultAPIKeyEnv(record.APIMessages); got != "ANTHROPIC_API_KEY" {
		t.Errorf("DefaultAPIKeyEnv(messages) = %q", got)
	}
}

// TestMessagesLengthsNotForced: the Messages API cannot force output lengths (no ignore_eos),
// so its analysis does not claim fixed_output and UnforcedLengths says why; the Responses
// API's can (vLLM's ignore_eos); without fixed_output nothing is to be forced.
func TestMessagesLengthsNotForced(t *testing.T) {
	c := Default()
	for _, fixed := range []bool{true, false} {
		c.Workload.FixedOutput = fixed
		for api, forced := range map[record.API]bool{record.APIChat: true, record.APIResponses: true, record.APIMessages: false} {
			c.Target.API = api
			if got := c.AnalysisOptions().Lengths.FixedOutput; got != (fixed && forced) {
				t.Errorf("%s, fixed_output %v: analysis fixed_output %v", api, fixed, got)
			}
			if why := c.UnforcedLengths(); (why != "") != (fixed && !forced) || (why != "" && !strings.Contains(why, "no ignore_eos")) {
				t.Errorf("%s, fixed_output %v: UnforcedLengths %q", api, fixed, why)
			}
		}
	}
}

// TestKeyEnvName: a target.api_key_env that is not a variable's name (a key given by
// mistake) is refused at its FILE:LINE or flag, without the value in the message; a name is
// accepted, and so is "" (no key).
func TestKeyEnvName(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-abc123XYZ"
	const msg = "target.api_key_env: not an environment variable's name (a key? give the variable's name)"
	for _, tc := range []struct {
		value, want string
	}{
		{key, ":3: " + msg},
		{"1KEY", ":3: " + msg},
		{"MY KEY", ":3: " + msg},
		{"_MY_KEY2", ""},
		{"", ""},
	} {
		yaml := "target:\n  url: http://127.0.0.1:8000/v1\n  api_key_env: '" + tc.value + "'\n  model: m\n"
		_, err := Load(writeConfig(t, yaml))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want %q", tc.value, err, tc.want)
		case err != nil && strings.Contains(err.Error(), tc.value):
			t.Errorf("%q: the error quotes the value: %v", tc.value, err)
		}
	}
	c := Default()
	c.Target.URL, c.Target.Model, c.Target.APIKeyEnv = "http://127.0.0.1:8000/v1", "m", key
	c.Override("target.api_key_env", "--api-key-env")
	if err := c.Validate(); err == nil || err.Error() != "--api-key-env: "+msg {
		t.Errorf("flag: error %v, want %q", err, "--api-key-env: "+msg)
	}
}
