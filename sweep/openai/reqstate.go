package openai

import (
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// stateKey is the context key of a request's reqState.
type stateKey struct{}

// reqState is one request's state shared with the HTTPDoer and the httptrace hooks. The
// connection hooks run in the goroutine of the RoundTrip, before Do returns; each attempt
// (a retry, see doer) starts over at GetConn, so the times are those of the last attempt.
type reqState struct {
	maxTokens  int
	ignoreEOS  bool
	model      string    // the model the request named (workload.models), "" for the target's
	firstGetAt time.Time // the first attempt's GetConn (a retry's set-up counts from it)
	getAt      time.Time
	gotAt      time.Time
	reused     bool        // the last attempt's connection had carried an earlier request
	firstByte  atomic.Bool // the last attempt read a response byte (set from net/http's read loop)
	retried    bool
	sentBytes  int // of the request body, as sent
	wireBytes  int // of the whole request, about (body, headers, request line)
	body       *sseBody
	// whole marks an answer that is one JSON body, not a stream (embeddings): the doer reads
	// a 2xx one whole into raw (readWhole), its last byte at bodyAt; reading is set once it
	// starts to (a failure then broke a response that had begun).
	whole      bool
	reading    bool
	raw        []byte
	bodyAt     time.Time
	w          watch         // the request's deadlines
	streamed   int           // content chunks read, for the messages of a failure
	retryAfter time.Duration // the answer's Retry-After, on a 429 or 503 (retryAfter)
	// clock is the kernel clock of the last attempt's connection (stampConn), nil when it has
	// none; mark the clock's mark of the request's start (connClock.beginRequest).
	clock connClock
	mark  int64
	// conn is the last attempt's connection, closed at once when the user leaves (leave.go).
	conn net.Conn
}

func (st *reqState) getConn(string) {
	st.getAt, st.gotAt, st.reused = time.Now(), time.Time{}, false
	if st.firstGetAt.IsZero() {
		st.firstGetAt = st.getAt
	}
	st.clock, st.mark = nil, 0
	st.firstByte.Store(false)
}

func (st *reqState) gotConn(info httptrace.GotConnInfo) {
	st.gotAt, st.reused, st.conn = time.Now(), info.Reused, info.Conn
	st.w.sent(st.gotAt.Sub(st.w.start)) // t_send: the user's cancel clock starts (leave.go)
	if st.clock = clockOf(info.Conn); st.clock != nil {
		st.mark = st.clock.beginRequest(st.wireBytes)
	}
}

// arrival returns the kernel arrival clock of the last attempt's connection, nil when none.
func (st *reqState) arrival() *atomic.Int64 {
	if st.clock == nil {
		return nil
	}
	return st.clock.readArrival()
}

// setup is the connection set-up the server forced before t_send (Record.Setup): the dial of
// the answered attempt when its connection was new, plus, for a retried request, the time
// from the first attempt's GetConn to the retry's (the failed attempt on the connection the
// server had closed).
func (st *reqState) setup() time.Duration {
	var d time.Duration
	if st.dialed() {
		d = st.connWait()
	}
	if st.retried && !st.firstGetAt.IsZero() && !st.getAt.IsZero() {
		d += st.getAt.Sub(st.firstGetAt)
	}
	return d
}

// dialed reports that the answered attempt's connection had carried no request before.
func (st *reqState) dialed() bool { return !st.gotAt.IsZero() && !st.reused }

func (st *reqState) gotFirstByte() { st.firstByte.Store(true) }

// staleConn reports that the last attempt failed on a reused connection before any response
// byte, the first attempt of the request: a failure to retry on a fresh connection.
func (st *reqState) staleConn() bool { return !st.retried && st.reused && !st.firstByte.Load() }

// sendTime is t_send: GotConn, else GetConn, else start.
func (st *reqState) sendTime(start time.Time) time.Time {
	switch {
	case !st.gotAt.IsZero():
		return st.gotAt
	case !st.getAt.IsZero():
		return st.getAt
	}
	return start
}

// connWait is GotConn − GetConn, or 0 when no connection was obtained.
func (st *reqState) connWait() time.Duration {
	if st.gotAt.IsZero() || st.getAt.IsZero() {
		return 0
	}
	return st.gotAt.Sub(st.getAt)
}
