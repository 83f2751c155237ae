package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// closeTestConfig is a fast fixed engine; close says whether it closes after each stream.
func closeTestConfig(close bool) Config {
	return Config{Profile: ProfileFixed, TTFT: time.Millisecond, ITL: 100 * time.Microsecond, CloseAfterStream: close}
}

// streamBody is a streamed chat request of n tokens.
func streamBody(n int) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":%d,"stream":true}`, DefaultModel, n)
}

// postOn writes a POST of body to path on conn and reads the response from br.
func postOn(t *testing.T, conn net.Conn, br *bufio.Reader, url, path, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(br, req)
}

// dialRaw opens a TCP connection to the test server at url; reads fail after 10 s so that a
// broken server fails the test instead of hanging it.
func dialRaw(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	return conn, bufio.NewReader(conn)
}

// TestCloseAfterStreamWire reads close_after_stream's bytes on a raw connection: the stream
// advertises keep-alive and ends normally (complete chunked terminator, [DONE]); then the
// server has closed the connection with nothing more sent, so a second request on it fails
// before any response byte; a fresh connection works; a non-streamed answer keeps its
// connection. Without the mode the same connection serves a second stream.
func TestCloseAfterStreamWire(t *testing.T) {
	_, url := newTestServer(t, closeTestConfig(true))
	conn, br := dialRaw(t, url)
	resp, err := postOn(t, conn, br, url, "/v1/chat/completions", streamBody(5))
	if err != nil {
		t.Fatal(err)
	}
	if c, k := resp.Header.Get("Connection"), resp.Header.Get("Keep-Alive"); c != "keep-alive" || k != "timeout=5" || resp.Close {
		t.Errorf("headers Connection %q, Keep-Alive %q (close %t); want keep-alive, timeout=5", c, k, resp.Close)
	}
	body, err := io.ReadAll(resp.Body) // the chunked reader fails on a missing terminator
	if err != nil || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("body: %v (transfer encoding %v)", err, resp.TransferEncoding)
	}
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") || strings.Count(string(body), `"content":"tok `) != 5 {
		t.Errorf("stream incomplete:\n%s", body)
	}
	if b, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("after the stream: read %q, %v; want EOF (the server closed the connection)", b, err)
	}
	if resp, err := postOn(t, conn, br, url, "/v1/chat/completions", streamBody(5)); err == nil {
		t.Errorf("second request on the closed connection answered %s", resp.Status)
	}

	conn2, br2 := dialRaw(t, url)
	for i := range 2 {
		resp, err := postOn(t, conn2, br2, url, "/v1/completions", `{"prompt":"a","max_tokens":3}`)
		if err != nil {
			t.Fatalf("fresh connection, plain request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `"completion_tokens":3`) {
			t.Fatalf("plain request %d: %s %v %s", i, resp.Status, err, b)
		}
	}

	_, url = newTestServer(t, closeTestConfig(false))
	conn3, br3 := dialRaw(t, url)
	for i := range 2 {
		resp, err := postOn(t, conn3, br3, url, "/v1/chat/completions", streamBody(3))
		if err != nil {
			t.Fatalf("keep-alive stream %d: %v", i, err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("keep-alive stream %d: %v", i, err)
		}
	}
}

// lateEOFConn is a client connection that reports the server's close only once the client has
// written again: the race llama-server's clients lose (the pooled connection is reused before
// the transport has read the FIN) made certain. "Again" is since the last data it read, so a
// transport whose reader reaches the FIN only after the next request was written (a busy
// machine schedules it late) gets the EOF at once instead of waiting for a write that never
// comes.
type lateEOFConn struct {
	net.Conn
	mu     sync.Mutex
	wrote  chan struct{} // closed by the next Write
	fresh  bool          // written since the last data read
	closed chan struct{}
	once   sync.Once
}

func newLateEOFConn(c net.Conn) *lateEOFConn {
	return &lateEOFConn{Conn: c, wrote: make(chan struct{}), closed: make(chan struct{})}
}

func (c *lateEOFConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	w, fresh := c.wrote, c.fresh
	if n > 0 {
		c.fresh = false
	}
	c.mu.Unlock()
	if n == 0 && err != nil && !fresh {
		select {
		case <-w:
		case <-c.closed:
		}
	}
	return n, err
}

func (c *lateEOFConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	close(c.wrote)
	c.wrote, c.fresh = make(chan struct{}), true
	c.mu.Unlock()
	return n, err
}

func (c *lateEOFConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestCloseAfterStreamPooled: Go's client, one connection per host, reuses the pooled
// connection after a close_after_stream stream and its POST fails with EOF (or a reset), not
// retried (the
// failure of issue 12 against llama-server); the next request dials afresh and succeeds.
func TestCloseAfterStreamPooled(t *testing.T) {
	_, url := newTestServer(t, closeTestConfig(true))
	var dials atomic.Int32
	var d net.Dialer
	tr := &http.Transport{MaxConnsPerHost: 1, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newLateEOFConn(c), nil
	}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	post := func() error {
		resp, err := hc.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody(4)))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			err = fmt.Errorf("stream without [DONE]: %s", b)
		}
		return err
	}
	if err := post(); err != nil {
		t.Fatalf("first stream: %v", err)
	}
	// The closed connection reads as EOF, or as a reset when the request's bytes reached the
	// socket after the server closed it: either way the pooled connection failed the POST.
	err := post()
	if !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) || dials.Load() != 1 {
		t.Errorf("second stream on the pooled connection: %v after %d dials; want EOF (or a reset) on the first connection", err, dials.Load())
	}
	t.Logf("second stream: %v", err)
	if err := post(); err != nil || dials.Load() != 2 {
		t.Errorf("third stream: %v after %d dials; want success on a fresh connection", err, dials.Load())
	}
}

// TestCloseAfterStreamShutdown: a graceful shutdown lets a close_after_stream stream (on a
// hijacked connection, which http.Server.Shutdown does not track) finish to [DONE].
func TestCloseAfterStreamShutdown(t *testing.T) {
	cfg := closeTestConfig(true)
	cfg.ITL = 2 * time.Millisecond // 50 tokens: about 100 ms left after the first
	run, err := Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	resp, err := http.Post(strings.TrimSuffix(run.URL, "/v1")+"/v1/chat/completions", "application/json", strings.NewReader(streamBody(50)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"content":"tok `) {
			break // the stream is under way
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- run.Shutdown(ctx) }()
	rest, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Errorf("stream cut by the shutdown: %v\n%s", err, rest)
	}
	if err := <-shut; err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestCloseAfterStreamClientLeaves: on a hijacked connection net/http no longer watches the
// client, so the simulator does: a client that leaves mid-stream frees its slot (the next
// request gets it long before the abandoned one's 5,000 steps), and a disconnect fault cuts
// the stream without its terminator.
func TestCloseAfterStreamClientLeaves(t *testing.T) {
	_, url := newTestServer(t, Config{MaxNumSeqs: 1, StepBase: time.Millisecond, OutputDist: outputFixed, OutputTokens: 5000,
		CloseAfterStream: true})
	c := newClient(url)
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.CreateChatCompletionStream(ctx, chatReq(5000, true))
	if err != nil {
		t.Fatal(err)
	}
	recvContent(t, st, 3)
	cancel()
	st.Close()
	start := time.Now()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	tr, err := chatStream(ctx2, newClient(url), chatReq(5, true)) // a new client: a fresh connection
	if err != nil {
		t.Fatal(err)
	}
	// ≥ 5 s were left of the abandoned request; 1 s leaves room for a loaded machine.
	if d := time.Since(start); d > time.Second || tr.tokens != 5 {
		t.Errorf("next request took %v for %d tokens; the slot was not freed", d, tr.tokens)
	}

	_, url = newTestServer(t, Config{Profile: ProfileFixed, TTFT: time.Millisecond, ITL: 100 * time.Microsecond,
		CloseAfterStream: true, Faults: Faults{DisconnectRate: 1}})
	conn, br := dialRaw(t, url)
	resp, err := postOn(t, conn, br, url, "/v1/chat/completions", streamBody(10))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(string(b), "[DONE]") {
		t.Errorf("disconnect fault: read %v, want a cut stream (unexpected EOF, no [DONE]):\n%s", err, b)
	}
}
