package openai

import (
	"context"
	"errors"
	"fmt"
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

// seen is one request a test server received.
type seen struct {
	method, path, auth, body string
	tenant                   string // the X-Tenant header, a custom Options.Header
}

// recorder is a loopback server that records every request it receives and answers POSTs
// with a short valid stream and GETs of /v1/models with a model list.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func startRecorder(t *testing.T, h func(w http.ResponseWriter, r *http.Request) bool) *recorder {
	t.Helper()
	rc := &recorder{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(b), r.Header.Get("X-Tenant")})
		rc.mu.Unlock()
		if h != nil && h(w, r) {
			return
		}
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		s := newSSE(w)
		s.data(contentChunk("a"))
		s.data(contentChunk("b"))
		s.data("[DONE]")
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *recorder) seen() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

// TestRedirects plays every redirect code against two loopback servers, to the second server
// (another origin: another port of the same host, which net/http would send the key to) and
// to the first one: only a same-origin 307 or 308 is followed, with the method, the body and
// the key intact; everything else fails the request as class redirect, naming the code and
// the Location without its secrets, and the second server receives nothing at all — so no
// Authorization header and no custom header (Options.Header) leaves for another origin.
func TestRedirects(t *testing.T) {
	const key = "sk-redirect-SECRET-42"
	for _, code := range []int{301, 302, 303, 307, 308} {
		for _, same := range []bool{false, true} {
			name := fmt.Sprintf("%d other origin", code)
			if same {
				name = fmt.Sprintf("%d same origin", code)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				other := startRecorder(t, nil)
				var self *recorder
				self = startRecorder(t, func(w http.ResponseWriter, r *http.Request) bool {
					if strings.HasPrefix(r.URL.Path, "/moved/") {
						return false // the redirect's target: a valid stream
					}
					to := other.srv.URL
					if same {
						to = self.srv.URL + "/moved"
					}
					// userinfo and a key-like query: the message must not repeat them.
					to = strings.Replace(to, "http://", "http://user:pw-SECRET@", 1) + r.URL.Path + "?api_key=q-SECRET"
					http.Redirect(w, r, to, code)
					return true
				})
				c := newClient(t, self.srv.URL, func(o *Options) {
					o.APIKey = key
					o.ExtraBody = map[string]any{"probe": "body-intact"}
					o.Header = http.Header{"X-Tenant": {"tenant-SECRET"}}
				})
				rec := do(t, c, record.Request{Prompt: "x y", PromptTokens: 2, MaxTokens: 2})
				if got := other.seen(); len(got) > 0 {
					t.Fatalf("the other origin received %d requests (first: %+v): it must receive none", len(got), got[0])
				}
				reqs := self.seen()
				for _, r := range reqs {
					if r.tenant != "tenant-SECRET" {
						t.Errorf("the target received %s %s without the custom header", r.method, r.path)
					}
				}
				followed := same && (code == 307 || code == 308)
				if followed {
					if rec.Status != record.StatusOK {
						t.Fatalf("%s %s %s, want the same-origin %d followed", rec.Status, rec.ErrorClass, rec.Error, code)
					}
					if len(reqs) != 2 || reqs[1].method != http.MethodPost || reqs[1].body != reqs[0].body ||
						!strings.Contains(reqs[1].body, "body-intact") || reqs[1].auth != "Bearer "+key {
						t.Fatalf("requests %+v: want the POST repeated at /moved with its body and key", reqs)
					}
					return
				}
				if rec.Status != record.StatusError || rec.ErrorClass != record.ErrRedirect {
					t.Fatalf("%s %q (%s), want error redirect", rec.Status, rec.ErrorClass, rec.Error)
				}
				if len(reqs) != 1 {
					t.Errorf("%d requests reached the first server, want only the redirected one: %+v", len(reqs), reqs)
				}
				want := fmt.Sprintf("openai: request: %d %s to http://", code, http.StatusText(code))
				if !strings.Contains(rec.Error, want) || !strings.Contains(rec.Error, "/v1/chat/completions") {
					t.Errorf("message %q does not name the code and the Location (%q)", rec.Error, want)
				}
				if strings.Contains(rec.Error, "SECRET") {
					t.Errorf("message %q repeats a secret of the Location", rec.Error)
				}
				why := "another origin"
				if same {
					why = "turns POST into GET"
				}
				if !strings.Contains(rec.Error, why) {
					t.Errorf("message %q does not say why (%q)", rec.Error, why)
				}
			})
		}
	}
}

// TestRedirectModelsAndPreflight checks GET /v1/models: a same-origin redirect of a GET keeps
// its method and is followed; one to another origin is refused, and the preflight over a
// target that redirects everything to another origin fails with the redirect's sentence.
func TestRedirectModelsAndPreflight(t *testing.T) {
	other := startRecorder(t, nil)
	var self *recorder
	self = startRecorder(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			return false
		case strings.HasPrefix(r.URL.Path, "/x/"):
			http.Redirect(w, r, other.srv.URL+r.URL.Path, http.StatusFound)
		default:
			http.Redirect(w, r, "/moved"+r.URL.Path, http.StatusMovedPermanently)
		}
		return true
	})
	c := newClient(t, self.srv.URL, func(o *Options) { o.APIKey = "sk-models" })
	models, err := c.Models(context.Background())
	if err != nil || len(models) != 1 || models[0] != "m" {
		t.Fatalf("models %v, %v: want the same-origin 301 of a GET followed", models, err)
	}

	c = newClient(t, self.srv.URL+"/x", nil) // /x/v1/… is redirected to the other origin
	_, err = c.Models(context.Background())
	if err == nil || !strings.Contains(err.Error(), "302 Found to "+other.srv.URL+"/x/v1/models (another origin") {
		t.Fatalf("models: %v, want the refused redirect named", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = server.RunPreflight(ctx, c, "m", server.PreflightTimeout)
	var ue *server.UnreachableError
	if !errors.As(err, &ue) || !strings.HasPrefix(ue.Cause, "redirect: openai: request: 302 Found to "+other.srv.URL) {
		t.Fatalf("preflight: %v, want an UnreachableError starting with the redirect", err)
	}
	if strings.Count(ue.Cause, other.srv.URL) != 1 {
		t.Errorf("preflight cause %q names the Location more than once", ue.Cause)
	}
	if got := other.seen(); len(got) > 0 {
		t.Errorf("the other origin received %+v", got)
	}
}
