package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// TestServerInfoSimulator probes the simulator over loopback: it answers GET /version as vLLM
// does (and 404 elsewhere), which identifies it with its decode slots.
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
	if got := sweep.IdentifyServer(bodies).String(); got != "kneecap-sim batching (max_num_seqs 12)" {
		t.Errorf("identified %q", got)
	}
}

// TestServerInfoRequests: the probe asks at the server's root (not under /v1), with the API
// key, and keeps only 200 answers within the size cap.
func TestServerInfoRequests(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/info":
			io.WriteString(w, `{"model_id":"m","version":"2.4.0"}`)
		case "/props":
			io.WriteString(w, strings.Repeat("x", sweep.MaxServerInfoBody+1))
		case "/api/version":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	c := newClient(t, hs.URL+"/prefix", func(o *Options) { o.APIKey = "sk-test" })
	bodies := c.ServerInfo(context.Background())
	if len(bodies) != 0 {
		t.Errorf("under /prefix every path is unknown: got %q", bodies)
	}
	c = newClient(t, hs.URL, func(o *Options) { o.APIKey = "sk-test" })
	bodies = c.ServerInfo(context.Background())
	if len(bodies) != 1 || string(bodies["/info"]) != `{"model_id":"m","version":"2.4.0"}` {
		t.Errorf("bodies %q, want /info only (/props is over the cap, /api/version failed)", bodies)
	}
	if got := sweep.IdentifyServer(bodies).Name(); got != "TGI 2.4.0" {
		t.Errorf("identified %q", got)
	}
}
