package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
)

// TestServerInfoSimulator probes the simulator over loopback: it answers GET /version as vLLM
// does (and 404 elsewhere), which identifies it with its decode slots and tokens per chunk.
func TestServerInfoSimulator(t *testing.T) {
	srv, err := sim.NewServer(sim.Config{MaxNumSeqs: 12})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	bodies := newClient(t, hs.URL, nil).ServerInfo(context.Background())
	if len(bodies) != 1 || bodies["/version"] == nil {
		t.Fatalf("bodies %q, want /version only", bodies)
	}
	if got := server.IdentifyServer(bodies).String(); got != "kneecap-sim batching (max_num_seqs 12, tokens_per_chunk 1)" {
		t.Errorf("identified %q", got)
	}
}

// TestServerInfoRequests: the probe asks at the server's root (not under /v1); it sends the
// API key only to a path that refused the request without it, follows no redirect (another
// port of the same host would get the key), removes the key from the bodies, and keeps only
// 200 answers within the size cap.
func TestServerInfoRequests(t *testing.T) {
	var elsewhere atomic.Int64 // requests the redirect target received with the key
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			elsewhere.Add(1)
		}
		io.WriteString(w, `{"version":"stolen"}`)
	}))
	t.Cleanup(other.Close)
	var keyed sync.Map // path → whether the key came
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if auth != "" {
			keyed.Store(r.URL.Path, true)
		}
		switch r.URL.Path {
		case "/info": // needs the key, and echoes it
			if auth != "Bearer sk-test" {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			io.WriteString(w, `{"model_id":"m","version":"2.4.0","max_concurrent_requests":128,"echo":"sk-test"}`)
		case "/props":
			io.WriteString(w, strings.Repeat("x", server.MaxServerInfoBody+1))
		case "/api/version":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case "/version":
			http.Redirect(w, r, other.URL+"/version", http.StatusFound)
		case "/get_server_info":
			io.WriteString(w, `{"public":true}`) // answers without the key: never sent it
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	c := newClient(t, hs.URL+"/prefix", func(o *Options) { o.APIKey = "sk-test" })
	if bodies := c.ServerInfo(context.Background()); len(bodies) != 0 {
		t.Errorf("under /prefix every path is unknown: got %q", bodies)
	}
	c = newClient(t, hs.URL, func(o *Options) { o.APIKey = "sk-test" })
	bodies := c.ServerInfo(context.Background())
	if len(bodies) != 2 || bodies["/info"] == nil || bodies["/get_server_info"] == nil {
		t.Errorf("bodies %q, want /info and /get_server_info (/props is over the cap, /api/version failed, /version redirected)", bodies)
	}
	if strings.Contains(string(bodies["/info"]), "sk-test") {
		t.Errorf("the key is in the body kept: %s", bodies["/info"])
	}
	if got := server.IdentifyServer(bodies).Name(); got != "TGI 2.4.0" {
		t.Errorf("identified %q", got)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect target got the key %d times", n)
	}
	if _, ok := keyed.Load("/get_server_info"); ok {
		t.Error("the key went to a path that answered without it")
	}
	if _, ok := keyed.Load("/info"); !ok {
		t.Error("the key never went to /info, which asked for it")
	}
}
