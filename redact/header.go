package redact

import (
	"encoding/base64"
	"strings"
)

// SecretHeader reports whether an HTTP header of this name carries a credential, so that its
// value is a secret of the run: whatever SecretKey reports (Authorization, Cookie, X-Api-Key,
// Api-Key, X-Auth-Token, …), and besides any name ending in -key (Ocp-Apim-Subscription-Key,
// X-Goog-Api-Key), holding "token" anywhere, or naming auth, session or a signature.
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	if SecretKey(n) || strings.HasSuffix(n, "-key") || strings.HasSuffix(n, "_key") || n == "key" {
		return true
	}
	for _, s := range []string{"token", "auth", "session", "signature", "cookie"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// HeaderSecrets returns the secrets a header value carries, for NewSecrets: the value, and,
// for a value of the form "SCHEME CREDENTIAL" (Bearer, Basic, Token, …), the credential
// alone, and for Basic also the decoded "user:password" and the password (a server may echo
// any of them).
func HeaderSecrets(value string) []string {
	out := []string{value}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok {
		return out
	}
	cred = strings.TrimSpace(cred)
	out = append(out, cred)
	if strings.EqualFold(scheme, "basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
			out = append(out, string(b))
			if _, pw, ok := strings.Cut(string(b), ":"); ok {
				out = append(out, pw)
			}
		}
	}
	return out
}
