package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
)

// TestCheckHeader: a name must be an HTTP token and not one the client writes itself; a value
// must be non-empty and hold no control character. No message quotes the value.
func TestCheckHeader(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string // want "" = accepted
	}{
		{"X-Tenant", "acme", ""},
		{"authorization", "Bearer sk-1", ""},
		{"x-api-key", "sk-1\tx", ""},
		{"", "v", "empty header name"},
		{"X Tenant", "v", "not a valid HTTP header name"},
		{"X-Tenant:", "v", "not a valid HTTP header name"},
		{"X-Ümlaut", "v", "not a valid HTTP header name"},
		{"host", "evil.example", "header Host: cannot be set"},
		{"Content-Length", "3", "header Content-Length: cannot be set"},
		{"accept", "text/plain", "header Accept: cannot be set"},
		{"Accept-Encoding", "gzip", "header Accept-Encoding: cannot be set"},
		{"Connection", "close", "header Connection: cannot be set"},
		{"X-Api-Key", "  ", "header X-Api-Key: empty value"},
		{"X-Api-Key", "sk-SECRET\r\nX-Evil: 1", "header X-Api-Key: the value holds a control character"},
	} {
		err := CheckHeader(tc.name, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckHeader(%q, %q) = %v, want nil", tc.name, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckHeader(%q, %q) = %v, want %q", tc.name, tc.value, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "SECRET"):
			t.Errorf("CheckHeader(%q, …) = %v: quotes the value", tc.name, err)
		}
	}
}

// TestNewRefusesHeaders: New refuses a bad header, and Authorization beside an API key.
func TestNewRefusesHeaders(t *testing.T) {
	for _, tc := range []struct {
		key  string
		h    http.Header
		want string
	}{
		{"sk-1", http.Header{"authorization": {"Bearer sk-2"}}, "header Authorization: conflicts with the API key"},
		{"", http.Header{"Host": {"x"}}, "header Host: cannot be set"},
	} {
		_, err := New(Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", APIKey: tc.key, Header: tc.h})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(key %q, header %v) = %v, want %q", tc.key, tc.h, err, tc.want)
		}
	}
	if _, err := New(Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Header: http.Header{"Authorization": {"Token t-1"}}}); err != nil {
		t.Errorf("Authorization without an API key: %v", err)
	}
}

// headerServer is a loopback OpenAI server that records, per path, the X-Tenant and
// X-Api-Key headers of every request, refuses with 401 every request without the key, and
// otherwise answers streams, /v1/models, /tokenize and /version.
type headerServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]string // path → "tenant|key" per request
}

const (
	tenant    = "acme-42"
	headerKey = "hk-SECRET-header-value"
)

func startHeaderServer(t *testing.T) *headerServer {
	t.Helper()
	hs := &headerServer{got: map[string][]string{}}
	hs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		hs.mu.Lock()
		hs.got[r.URL.Path] = append(hs.got[r.URL.Path], r.Header.Get("X-Tenant")+"|"+r.Header.Get("X-Api-Key"))
		hs.mu.Unlock()
		if r.Header.Get("X-Api-Key") != headerKey {
			http.Error(w, `{"error":{"message":"bad key `+r.Header.Get("X-Api-Key")+`"}}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		case "/tokenize":
			io.WriteString(w, `{"count":3,"max_model_len":4096}`)
		case "/version":
			io.WriteString(w, `{"version":"0.6.3","echo":"`+r.Header.Get("X-Api-Key")+`"}`)
		case "/v1/chat/completions":
			s := newSSE(w)
			s.data(contentChunk("a"))
			s.data("[DONE]")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.srv.Close)
	return hs
}

func (hs *headerServer) seen(path string) []string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]string(nil), hs.got[path]...)
}

// TestHeaderOnEveryRequest: Options.Header goes with the preflight's GET /v1/models and probe
// request, every streamed request, /tokenize and the server-info probes at the root; the root's
// probes first go without the secret header (as without the API key) and repeat with it after a
// 401; the secret never appears in a body kept or an error message.
func TestHeaderOnEveryRequest(t *testing.T) {
	hs := startHeaderServer(t)
	c := newClient(t, hs.srv.URL, func(o *Options) {
		o.Header = http.Header{"x-tenant": {tenant}, "X-API-KEY": {headerKey}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := server.RunPreflight(ctx, c, "m", server.PreflightTimeout); err != nil {
		t.Fatalf("preflight: %v", err)
	}
	if rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 1}); rec.Status != record.StatusOK {
		t.Fatalf("request: %s %s", rec.Status, rec.Error)
	}
	tk, err := c.Tokenize(ctx)
	if err != nil {
		t.Fatalf("tokenize: %v", err)
	}
	if n, err := tk.CountTokens(ctx, "a b c"); err != nil || n != 3 {
		t.Fatalf("count: %d, %v", n, err)
	}
	bodies := c.ServerInfo(ctx)
	if b := string(bodies["/version"]); b == "" || strings.Contains(b, headerKey) {
		t.Errorf("/version body %q: want it kept without the secret", b)
	}
	want := tenant + "|" + headerKey
	for _, path := range []string{"/v1/models", "/v1/chat/completions"} {
		got := hs.seen(path)
		if len(got) == 0 {
			t.Errorf("%s: never requested", path)
		}
		for _, g := range got {
			if g != want {
				t.Errorf("%s received %q, want %q", path, g, want)
			}
		}
	}
	for _, path := range []string{"/tokenize", "/version", "/info"} {
		got := hs.seen(path)
		if len(got) < 2 || got[0] != tenant+"|" || got[1] != want {
			t.Errorf("%s received %q: want %q (the secret withheld), then %q after the 401", path, got, tenant+"|", want)
		}
	}
}

// TestHeaderSecretNotInErrors: a server that echoes the secret header in its error message
// does not get it into the record's error.
func TestHeaderSecretNotInErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"key `+r.Header.Get("Authorization")+` is revoked"}}`, http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, func(o *Options) { o.Header = http.Header{"Authorization": {"Token " + headerKey}} })
	rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 1})
	if rec.Status != record.StatusError || !strings.Contains(rec.Error, "revoked") {
		t.Fatalf("%s %q, want the server's refusal", rec.Status, rec.Error)
	}
	if strings.Contains(rec.Error, headerKey) {
		t.Errorf("error %q holds the secret header's value", rec.Error)
	}
}

// TestHeaderNotSentToAnotherOrigin: even through a redirect policy that would follow a
// redirect to another origin (the client's refuses; see TestRedirects), the transport adds
// Options.Header only to requests for the base URL's origin, so the other origin never sees
// them.
func TestHeaderNotSentToAnotherOrigin(t *testing.T) {
	var otherHeader sync.Map
	otherSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHeader.Store("tenant", r.Header.Get("X-Tenant"))
		otherHeader.Store("key", r.Header.Get("X-Api-Key"))
		io.WriteString(w, "{}")
	}))
	t.Cleanup(otherSrv.Close)
	self := startRecorder(t, func(w http.ResponseWriter, r *http.Request) bool {
		http.Redirect(w, r, otherSrv.URL+"/elsewhere", http.StatusFound)
		return true
	})
	c := newClient(t, self.srv.URL, func(o *Options) {
		o.Header = http.Header{"X-Tenant": {tenant}, "X-Api-Key": {headerKey}}
	})
	hc := &http.Client{Transport: c.rt} // net/http's default policy: follows the 302
	resp, err := hc.Get(self.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := self.seen(); len(got) != 1 || got[0].tenant != tenant {
		t.Errorf("the target received %+v, want one request with X-Tenant", got)
	}
	v, ok := otherHeader.Load("tenant")
	if !ok {
		t.Fatal("the redirect was not followed: the test proves nothing")
	}
	if k, _ := otherHeader.Load("key"); v != "" || k != "" {
		t.Errorf("the other origin received X-Tenant %q, X-Api-Key %q: want neither", v, k)
	}
}
