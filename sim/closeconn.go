package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// hijackStream takes the connection over for close_after_stream and writes the stream's status
// and headers on it as llama.cpp's llama-server does: it advertises keep-alive (Connection:
// keep-alive, Keep-Alive: timeout=5) with a chunked body, and end closes the connection right
// after the body's last byte. The chunked terminator is complete, so a client reading the
// stream sees it end normally; only a next request on the same connection fails, before any
// response byte (EOF, or a reset when the request reached the closed socket).
//
// Two goroutines, both ended and waited for by end: a reader that discards whatever the
// client sends and cancels the returned context when it goes away (net/http no longer
// watches a hijacked connection), and a closer that closes the connection when the stream
// ends, the client leaves or the server stops (so a write stuck on a client that stopped
// reading cannot outlive Close). ok is false, and nothing is written, when the connection
// cannot be hijacked (HTTP/2) or the request is not HTTP/1.1; the stream is then served
// normally.
func (s *Server) hijackStream(w http.ResponseWriter, r *http.Request) (ctx context.Context, sink streamSink, end func(bool), ok bool) {
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return nil, nil, nil, false
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithCancel(r.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(io.Discard, brw.Reader) // until the client closes or the closer does
		cancel()
	})
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-s.stop:
		}
		_ = conn.Close()
	})
	cc := &chunkedConn{bw: brw.Writer}
	fmt.Fprintf(cc.bw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nCache-Control: no-cache\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nDate: %s\r\nTransfer-Encoding: chunked\r\n\r\n",
		eventStreamType, time.Now().UTC().Format(http.TimeFormat))
	end = func(complete bool) {
		if complete {
			_, _ = cc.bw.WriteString("0\r\n\r\n") // the chunked terminator: the body ends normally
			_ = cc.bw.Flush()
		}
		cancel() // the closer closes the connection; the reader then ends
		wg.Wait()
	}
	return ctx, cc, end, true
}

// chunkedConn writes an HTTP/1.1 chunked body on a hijacked connection: each Write is one
// chunk; Flush sends them.
type chunkedConn struct {
	bw *bufio.Writer
}

func (c *chunkedConn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.bw.WriteString(strconv.FormatInt(int64(len(b)), 16))
	c.bw.WriteString("\r\n")
	c.bw.Write(b)
	if _, err := c.bw.WriteString("\r\n"); err != nil { // bufio's errors are sticky
		return 0, err
	}
	return len(b), nil
}

func (c *chunkedConn) Flush() error { return c.bw.Flush() }
