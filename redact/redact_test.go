package redact

import "testing"

func TestSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"api_key": true, "X-API-Key": true, "apiKey": true, "Authorization": true, "token": true,
		"auth_token": true, "access_token": true, "accessToken": true, "client_secret": true,
		"password": true, "max_tokens": false, "min_tokens": false, "stop_token_ids": false,
		"ignore_eos": false, "top_k": false, "max_completion_tokens": false,
	} {
		if got := SecretKey(k); got != want {
			t.Errorf("SecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// TestUserinfo: the user:password of URLs in free text is replaced, whatever the scheme;
// text without one is returned as it is.
func TestUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"dial https://alice:s3cret@gpu:8000/v1 failed": "dial https://REDACTED@gpu:8000/v1 failed",
		`{"url": "redis://:pw@cache:6379"}`:            `{"url": "redis://REDACTED@cache:6379"}`,
		"http://host/v1 and mailto:a@b":                "http://host/v1 and mailto:a@b",
	} {
		if got := Userinfo(in); got != want {
			t.Errorf("Userinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestURLAndText: URL drops userinfo and secret query values; Text removes literal secrets.
func TestURLAndText(t *testing.T) {
	if got := URL("https://u:p@host/v1?api_key=k&model=m"); got != "https://host/v1?api_key=REDACTED&model=m" {
		t.Errorf("URL = %q", got)
	}
	if got := Text("Bearer sk-123 rejected", "sk-123", ""); got != "Bearer [REDACTED] rejected" {
		t.Errorf("Text = %q", got)
	}
}

// TestURLWithoutQuery: userinfo and the whole query go; an unparseable string is not echoed.
func TestURLWithoutQuery(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p@host:8000/v1?sig=abc&model=m": "http://host:8000/v1",
		"http://host/v1?":                         "http://host/v1",
		"http://[::1:bad/v1 key=sk-1":             "<unparseable>",
	} {
		if got := URLWithoutQuery(in); got != want {
			t.Errorf("URLWithoutQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
