package redact

import (
	"slices"
	"testing"
)

func TestSecretHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "X-Api-Key": true,
		"api-key": true, "Ocp-Apim-Subscription-Key": true, "X-Auth-Token": true, "X-Goog-Api-Key": true,
		"X-Client-Secret": true, "Token": true, "X-Session-Id": true, "X-Amz-Security-Token": true,
		"X-Request-Id": false, "User-Agent": false, "X-Tenant": false, "OpenAI-Organization": false,
		"X-Model-Route": false, "Keyboard": false,
	} {
		if got := SecretHeader(name); got != want {
			t.Errorf("SecretHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHeaderSecrets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"sk-plain-1234", []string{"sk-plain-1234"}},
		{"Bearer sk-bearer-1234", []string{"Bearer sk-bearer-1234", "sk-bearer-1234"}},
		// base64("user:pw-SECRET")
		{"Basic dXNlcjpwdy1TRUNSRVQ=", []string{"Basic dXNlcjpwdy1TRUNSRVQ=", "dXNlcjpwdy1TRUNSRVQ=", "user:pw-SECRET", "pw-SECRET"}},
	} {
		if got := HeaderSecrets(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("HeaderSecrets(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
