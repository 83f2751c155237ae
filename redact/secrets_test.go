package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"testing"
)

// testSecret has characters that percent-encoding, JSON and base64 each change.
const testSecret = "sk-T0p/S3cret+Key=<42>"

// forms returns every form of secret a test greps for: the ones Secrets promises.
func forms(secret string) []string {
	out := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
	for _, p := range []string{secret, "Bearer " + secret, "user:" + secret} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(p)))
		}
	}
	return out
}

// TestSecretsEveryForm: each form of the secret, embedded in a message, is gone from Text's
// result, and the words around it stay.
func TestSecretsEveryForm(t *testing.T) {
	s := NewSecrets(testSecret)
	js, _ := json.Marshal(testSecret)
	cases := append(forms(testSecret),
		lowerHex(url.QueryEscape(testSecret)),     // %2f
		string(js[1:len(js)-1]),                   // \u003c42\u003e
		strings.ReplaceAll(testSecret, "/", `\/`), // PHP's json_encode
		// base64 of a JSON body holding the key at each of the three offsets of a group
		base64.StdEncoding.EncodeToString([]byte(`{"k":"`+testSecret+`"}`)),
		base64.StdEncoding.EncodeToString([]byte(`{"kk":"`+testSecret+`"}`)),
		base64.URLEncoding.EncodeToString([]byte(`{"kkk":"`+testSecret+`"}`)),
	)
	for _, f := range cases {
		msg := "before " + f + " after"
		got := s.Text(msg)
		if strings.Contains(got, f) || !strings.Contains(got, Marker) {
			t.Errorf("Text(%q) = %q: the form is still there", msg, got)
		}
		if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
			t.Errorf("Text(%q) = %q: the words around the secret changed", msg, got)
		}
	}
}

// TestSecretsLeavesTextAlone: text without a secret or a URL is returned as it is, and a
// secret below minSecret is not searched for.
func TestSecretsLeavesTextAlone(t *testing.T) {
	for _, msg := range []string{
		"openai: stream: error, status code: 500, message: engine crashed",
		"max_tokens=64 temperature=0 http://127.0.0.1:8000/v1/chat/completions",
		"Post \"http://127.0.0.1:1/v1/chat/completions\": dial tcp: connection refused",
	} {
		if got := NewSecrets(testSecret).Text(msg); got != msg {
			t.Errorf("Text(%q) = %q", msg, got)
		}
	}
	if got := NewSecrets("abc").Text("abcdef"); got != "abcdef" {
		t.Errorf("a 3-byte secret was replaced: %q", got)
	}
	var none *Secrets
	if got := none.Text("http://u:p@h/v1"); got != "http://REDACTED@h/v1" {
		t.Errorf("nil Secrets: %q", got)
	}
}

// TestTextURLs: free text loses the userinfo of its URLs and the values of secret query
// parameters, however the URL ends (a quote, a path appended after the query).
func TestTextURLs(t *testing.T) {
	for in, want := range map[string]string{
		`Post "http://sk-1234@127.0.0.1:1/v1/chat/completions": refused`:         `Post "http://REDACTED@127.0.0.1:1/v1/chat/completions": refused`,
		`Post "http://127.0.0.1:1/v1?api_key=sk-1234/chat/completions": refused`: `Post "http://127.0.0.1:1/v1?api_key=REDACTED": refused`,
		"GET http://h/metrics?model=m&access_token=abc#x failed":                 "GET http://h/metrics?model=m&access_token=REDACTED#x failed",
		"rejected password=hunter22 for user":                                    "rejected password=REDACTED for user",
		"max_tokens=5 stop_token_ids=1 ignore_eos=true":                          "max_tokens=5 stop_token_ids=1 ignore_eos=true",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// TestURLSecrets: a URL's password, its Basic credential and its secret query values.
func TestURLSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw-1234@h/v1":           "pw-1234 user:pw-1234",
		"http://sk-1234@h/v1":                "sk-1234",
		"http://h/metrics?token=t-1&model=m": "t-1",
		"http://h/v1":                        "",
	} {
		if got := strings.Join(URLSecrets(in), " "); got != want {
			t.Errorf("URLSecrets(%q) = %q, want %q", in, got, want)
		}
	}
	tree := map[string]any{"api_key": "k-1", "nested": map[string]any{"auth": map[string]any{"password": "p-1"}}, "temperature": "0"}
	if got := strings.Join(TreeSecrets(tree, SecretKey), " "); got != "k-1 p-1" {
		t.Errorf("TreeSecrets = %q", got)
	}
}

// TestSecretsErrorAndWriter: Error keeps the chain (errors.Is) and redacts the message;
// Writer redacts what passes through it and reports the caller's byte count.
func TestSecretsErrorAndWriter(t *testing.T) {
	s := NewSecrets(testSecret)
	err := s.Error(fmt.Errorf("open %s: %w", testSecret, fs.ErrNotExist))
	if !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), testSecret) {
		t.Errorf("Error: %v (Is ErrNotExist: %v)", err, errors.Is(err, fs.ErrNotExist))
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
	var b bytes.Buffer
	msg := "key " + testSecret + "\n"
	n, err := s.Writer(&b).Write([]byte(msg))
	if err != nil || n != len(msg) || b.String() != "key "+Marker+"\n" {
		t.Errorf("Writer: n %d, err %v, wrote %q", n, err, b.String())
	}
	if got := s.With("other-secret").Text(testSecret + " other-secret"); got != Marker+" "+Marker {
		t.Errorf("With: %q", got)
	}
}
