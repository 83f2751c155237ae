package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kneecap/kneecap/server"
)

// TestPreflightHang: a preflight cut by its bound at a server that accepted the connection says
// what the request cut got (server.UnreachableError.Silence), which a sweep records in a results
// directory: GET /models from a listener that never answers (no probe sent), the probe's
// response headers and then nothing, one token and then nothing. A refused connection is no
// hang: no Silence, and no wait.
func TestPreflightHang(t *testing.T) {
	t.Parallel()
	const bound = 300 * time.Millisecond
	chunk := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"z"}}]}` + "\n\n"
	held := func(tokens int) string { // /models 404, the probe's headers and tokens, then nothing
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/chat/completions" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			for range tokens {
				fmt.Fprint(w, chunk)
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(func() { close(release); srv.CloseClientConnections(); srv.Close() })
		return srv.URL + "/v1"
	}
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		return "http://" + ln.Addr().String() + "/v1"
	}
	for _, c := range []struct {
		name, url, want string
	}{
		{"silent listener", silentListener(t), fmt.Sprintf("the server accepted the connection and answered nothing within %v: GET /models sent nothing (the completion probe was not sent)", bound)},
		{"headers only", held(0), fmt.Sprintf("the server accepted the connection and answered nothing within %v: the completion probe sent its response headers and then no complete answer", bound)},
		{"one token", held(1), fmt.Sprintf("the server accepted the connection and gave no complete answer within %v: the completion probe streamed 1 token and did not finish", bound)},
		{"refused", refused(), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := server.RunPreflight(context.Background(), newClient(t, c.url, 1), "m", bound)
			var down *server.UnreachableError
			if !errors.As(err, &down) || down.Silence != c.want || down.Waited != (c.want != "") {
				t.Errorf("preflight: %v (%+v), want Silence %q", err, down, c.want)
			}
		})
	}
}

// silentListener is the URL of a listener that accepts every connection and never sends a byte.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/v1"
}
