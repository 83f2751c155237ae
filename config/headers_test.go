package config

import (
	"slices"
	"strings"
	"testing"
)

// TestHeadersValidate: every bad header of target.headers is a problem at its FILE:LINE (or
// the flag that set it), and none quotes a value.
func TestHeadersValidate(t *testing.T) {
	const file = `target:
  url: http://127.0.0.1:8000/v1
  model: m
  headers:
    X-Tenant: acme
    Host: evil.example
    "X Bad": v
    x-tenant: again
    X-Api-Key: ""
`
	c, err := parseConfig("f.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	got := Problems(c.Validate())
	want := []string{
		"f.yaml:6: target.headers.Host: header Host: cannot be set (net/http sets it from the URL)",
		`f.yaml:7: target.headers.X Bad: header name "X Bad": not a valid HTTP header name`,
		"f.yaml:8: target.headers.x-tenant: the same header as X-Tenant (header names ignore case): give it once",
		"f.yaml:9: target.headers.X-Api-Key: header X-Api-Key: empty value",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %q, want prefix %q", i, got[i], want[i])
		}
	}
	c.Target.Headers = map[string]string{"Content-Length": "1"}
	c.Override("target.headers.Content-Length", "--header")
	if p := Problems(c.Validate()); len(p) != 1 || !strings.HasPrefix(p[0], "--header: target.headers.Content-Length: header Content-Length: cannot be set") {
		t.Errorf("flag-set header: %q", p)
	}
}

// TestHeadersRedactedAndSecrets: config.yaml holds REDACTED for a secret-looking header and
// the value for any other; Secrets holds the secret in its forms (the credential after its
// scheme too).
func TestHeadersRedactedAndSecrets(t *testing.T) {
	c := Default()
	c.Target.Headers = map[string]string{"X-Tenant": "acme", "Authorization": "Token tk-SECRET-1", "X-Api-Key": "xk-SECRET-2"}
	r := c.Redacted()
	if r.Target.Headers["X-Tenant"] != "acme" || r.Target.Headers["Authorization"] != "REDACTED" || r.Target.Headers["X-Api-Key"] != "REDACTED" {
		t.Errorf("redacted headers %v", r.Target.Headers)
	}
	if c.Target.Headers["X-Api-Key"] != "xk-SECRET-2" {
		t.Error("Redacted modified the original headers")
	}
	s := c.Secrets()
	for _, want := range []string{"Token tk-SECRET-1", "tk-SECRET-1", "xk-SECRET-2"} {
		if !slices.Contains(s, want) {
			t.Errorf("Secrets %q lack %q", s, want)
		}
	}
	if slices.Contains(s, "acme") {
		t.Errorf("Secrets %q hold a header that is no secret", s)
	}
	if h := c.Target.HTTPHeader(); h.Get("x-api-key") != "xk-SECRET-2" || len(h) != 3 {
		t.Errorf("HTTPHeader %v", h)
	}
}
