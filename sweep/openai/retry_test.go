package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// staleServer answers a request only while answer says so for the request's number on its
// connection (from 1) and its number overall (from 1); otherwise it closes the connection
// having read the request and written nothing, as a server does that has closed a keep-alive
// connection the client then reuses. It records when it closed each one.
type staleServer struct {
	*httptest.Server
	attempts atomic.Int64
	mu       sync.Mutex
	closed   []time.Time
}

type connCount struct{}

func startStale(t *testing.T, answer func(onConn, overall int64) bool) *staleServer {
	t.Helper()
	s := &staleServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.Context().Value(connCount{}).(*atomic.Int64).Add(1)
		if !answer(n, s.attempts.Add(1)) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			s.mu.Lock()
			s.closed = append(s.closed, time.Now())
			s.mu.Unlock()
			conn.Close()
			return
		}
		// A retry sends the whole body again.
		var body struct {
			Model    string `json:"model"`
			Messages []any  `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model != "m" || len(body.Messages) != 1 {
			t.Errorf("request body: %v (%+v)", err, body)
		}
		sse := newSSE(w)
		sse.data(contentChunk("a"))
		sse.data(contentChunk("b"))
		sse.data(usageChunk(1, 2))
		sse.data("[DONE]")
	}))
	s.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connCount{}, new(atomic.Int64))
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// lastClose is when the server last closed a connection without answering.
func (s *staleServer) lastClose() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.closed) == 0 {
		return time.Time{}
	}
	return s.closed[len(s.closed)-1]
}

// TestRetryStaleConnection: a server that closes a connection on its second request, having
// answered the first. Sequential requests alternate: a fresh connection is answered and
// pooled (the drain after [DONE] returns it to the pool before Do returns), the next request
// reuses it, fails before any response byte and is retried on a fresh connection, which is
// answered. Every request succeeds; exactly the reusing ones are Retried; t_send is the
// answered attempt's, so it follows the close of the failed one, and its set-up (setup_ns)
// covers the failed attempt.
func TestRetryStaleConnection(t *testing.T) {
	srv := startStale(t, func(onConn, _ int64) bool { return onConn == 1 })
	c := newClient(t, srv.URL, nil)
	const n = 8
	for i := range n {
		rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 2})
		if rec.Status != record.StatusOK || rec.OutputTokens != 2 {
			t.Fatalf("request %d: %s %s %s (out %d)", i, rec.Status, rec.ErrorClass, rec.Error, rec.OutputTokens)
		}
		if want := i%2 == 1; rec.Retried != want {
			t.Errorf("request %d: retried %v, want %v", i, rec.Retried, want)
		}
		if rec.Retried {
			if closed := srv.lastClose(); closed.IsZero() || rec.Sent <= closed.UnixNano() {
				t.Errorf("request %d: t_send %d not after the failed attempt's close %v: not the answered attempt's", i, rec.Sent, closed)
			}
		}
		// Every answered attempt dialled (the server closes what it answered); a retried
		// request's set-up reaches back from its client t_send to before the failed attempt's
		// close, the others' is their dial.
		sent := rec.Sent
		if rec.ClientSent != 0 {
			sent = rec.ClientSent
		}
		switch {
		case !rec.Dialed || rec.Setup < rec.ConnWait || rec.ConnWait <= 0:
			t.Errorf("request %d: dialed %v, setup %v, conn_wait %v: want a dial counted as set-up", i, rec.Dialed, rec.Setup, rec.ConnWait)
		case rec.Retried && sent-int64(rec.Setup) >= srv.lastClose().UnixNano():
			t.Errorf("request %d: setup %v from t_send %d does not cover the failed attempt (closed at %v)", i, rec.Setup, sent, srv.lastClose())
		case !rec.Retried && rec.Setup != rec.ConnWait:
			t.Errorf("request %d: setup %v, want its dial %v", i, rec.Setup, rec.ConnWait)
		}
	}
	if got, want := srv.attempts.Load(), int64(n+n/2); got != want {
		t.Errorf("server saw %d attempts for %d requests, want %d (one retry each for %d)", got, n, want, n/2)
	}
}

// TestRetryOnlyOnce: after the first request, the server answers none. The second request
// fails on its reused connection, is retried once on a fresh one, fails there too and is an
// error (retried, stream_broken) after exactly two attempts.
func TestRetryOnlyOnce(t *testing.T) {
	srv := startStale(t, func(_, overall int64) bool { return overall == 1 })
	c := newClient(t, srv.URL, nil)
	if rec := do(t, c, record.Request{Prompt: "x"}); rec.Status != record.StatusOK || rec.Retried {
		t.Fatalf("first request: %s %s retried %v", rec.Status, rec.Error, rec.Retried)
	}
	rec := do(t, c, record.Request{Prompt: "x"})
	if rec.Status != record.StatusError || rec.ErrorClass != record.ErrStreamBroken || !rec.Retried {
		t.Errorf("second request: %s %s retried %v (%s), want a retried stream_broken error", rec.Status, rec.ErrorClass, rec.Retried, rec.Error)
	}
	if got := srv.attempts.Load(); got != 3 {
		t.Errorf("server saw %d attempts, want 3 (the second request sent twice)", got)
	}
}

// TestNoRetryOnFreshConnection: a failure on a connection dialled for the request is the
// server's and is not retried.
func TestNoRetryOnFreshConnection(t *testing.T) {
	srv := startStale(t, func(int64, int64) bool { return false })
	rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "x"})
	if rec.Status != record.StatusError || rec.ErrorClass != record.ErrStreamBroken || rec.Retried {
		t.Errorf("%s %s retried %v (%s), want a stream_broken error not retried", rec.Status, rec.ErrorClass, rec.Retried, rec.Error)
	}
	if got := srv.attempts.Load(); got != 1 {
		t.Errorf("server saw %d attempts, want 1", got)
	}
}

// TestNoRetryAfterResponseByte: a reused connection that fails after the response began
// (headers sent, then the connection cut) is the server's failure, not retried.
func TestNoRetryAfterResponseByte(t *testing.T) {
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sse := newSSE(w)
		if attempts.Add(1) > 1 {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err == nil {
				buf.Flush()
				conn.Close()
			}
			return
		}
		sse.data(contentChunk("a"))
		sse.data("[DONE]")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	if rec := do(t, c, record.Request{Prompt: "x"}); rec.Status != record.StatusOK {
		t.Fatalf("first request: %s %s", rec.Status, rec.Error)
	}
	rec := do(t, c, record.Request{Prompt: "x"})
	if rec.Status != record.StatusError || rec.Retried {
		t.Errorf("%s %s retried %v (%s), want an error not retried", rec.Status, rec.ErrorClass, rec.Retried, rec.Error)
	}
	if got := attempts.Load(); got != 2 {
		t.Errorf("server saw %d attempts, want 2", got)
	}
}

// closeAfterStream serves like llama.cpp's llama-server: a complete chunked stream that
// advertises "Connection: keep-alive" and "Keep-Alive: timeout=5", then the TCP connection
// closed. A client that reuses the pooled connection before it notices the close gets EOF.
// It counts the requests it answered.
func closeAfterStream(t *testing.T, chunks int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		served.Add(1)
		bw := bufio.NewWriter(conn)
		fmt.Fprint(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n")
		event := func(s string) {
			s = "data: " + s + "\n\n"
			fmt.Fprintf(bw, "%x\r\n%s\r\n", len(s), s)
		}
		for range chunks {
			event(contentChunk("t"))
		}
		event(usageChunk(1, chunks))
		event("[DONE]")
		fmt.Fprint(bw, "0\r\n\r\n")
		bw.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv, &served
}

// TestCloseAfterStreamSweep: a sweep at concurrency 1, 2, 4 and 8 (sweep.Run, the real
// client) against a server that closes every connection after its stream while advertising
// keep-alive has no error: each request that met a closed pooled connection was retried.
func TestCloseAfterStreamSweep(t *testing.T) {
	srv, served := closeAfterStream(t, 8)
	cl := newClient(t, srv.URL, nil)
	recs := runSweep(t, cl, []int{1, 2, 4, 8})
	retried := 0
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			t.Errorf("level %d worker %d seq %d: %s %s: %s", r.Concurrency, r.Worker, r.Seq, r.Status, r.ErrorClass, r.Error)
		}
		if r.Retried {
			retried++
		}
	}
	// Every request was answered once, by the attempt it records.
	if got := served.Load(); got != int64(len(recs)) {
		t.Errorf("server answered %d requests for %d records", got, len(recs))
	}
	t.Logf("%d requests, %d retried on a fresh connection", len(recs), retried)
}

// runSweep runs a short closed-loop sweep of levels against cl and returns its records.
func runSweep(t *testing.T, cl record.Client, levels []int) []record.Record {
	t.Helper()
	recs, _ := runSweepRuns(t, cl, levels)
	return recs
}

// runSweepRuns runs a short closed-loop sweep of levels against cl and returns its records
// and levels.
func runSweepRuns(t *testing.T, cl record.Client, levels []int) ([]record.Record, []record.LevelRun) {
	t.Helper()
	wl, err := workload.NewWorkload(workload.WorkloadConfig{
		InputTokens:  workload.Dist{Dist: workload.DistFixed, Mean: 8},
		OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 8},
		FixedOutput:  true,
		Seed:         1,
	}, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	plan := sweep.Plan{
		Levels: levels,
		Protocol: sweep.Protocol{
			Warmup:       20 * time.Millisecond,
			WarmupMax:    time.Second,
			Duration:     200 * time.Millisecond,
			MaxDuration:  200 * time.Millisecond,
			CITarget:     0.5,
			DrainTimeout: 5 * time.Second,
		},
		Workload: wl,
	}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), nil, plan, cl, sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.runs) != len(levels) {
		t.Fatalf("sweep ran %d of %d levels: %s", len(sink.runs), len(levels), out.StopReason)
	}
	return sink.recs, sink.runs
}
