package server

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// A preflight that hung (DESIGN §3.1): the server accepted the connection and sent nothing,
// or only headers, or too little, within the preflight's bound. A sweep records such a
// server as any silent one (a results directory with the stop reason), unlike one that
// refused the connection, failed DNS or TLS, or answered with an error, which leaves none.

// heard is what one preflight request got from the server, as its connection trace saw it.
type heard struct {
	conn, firstByte atomic.Bool
}

// traced returns ctx with a connection trace that fills h; the client's own trace is composed
// with it (httptrace.WithClientTrace).
func (h *heard) traced(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { h.conn.Store(true) },
		GotFirstResponseByte: func() { h.firstByte.Store(true) },
	})
}

// silence says what request what, cut by the preflight's bound timeout, got from a server
// that accepted its connection (UnreachableError.Silence): "" when no connection was accepted
// (a dial that hangs, as to an address nothing listens at, is no server to record). tokens is
// how many content tokens it streamed (0 for GET /models).
func (h *heard) silence(what string, timeout time.Duration, tokens int) string {
	if !h.conn.Load() {
		return ""
	}
	answered, saw := "answered nothing", "sent nothing"
	switch {
	case tokens > 0:
		saw = fmt.Sprintf("streamed %d tokens and did not finish", tokens)
		if tokens == 1 {
			saw = "streamed 1 token and did not finish"
		}
		answered = "gave no complete answer"
	case h.firstByte.Load():
		saw = "sent its response headers and then no complete answer"
	}
	return fmt.Sprintf("the server accepted the connection and %s within %s: %s %s", answered, timeout.Round(time.Millisecond), what, saw)
}
