package openai

import (
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
	maxTokens int
	ignoreEOS bool
	getAt     time.Time
	gotAt     time.Time
	reused    bool        // the last attempt's connection had carried an earlier request
	firstByte atomic.Bool // the last attempt read a response byte (set from net/http's read loop)
	retried   bool
	sentBytes int // of the request body, as sent
	body      *sseBody
	w         watch // the request's deadlines
	streamed  int   // content chunks read, for the messages of a failure
	// arrival is the kernel arrival clock of the last attempt's connection (stampConn), nil
	// when it has none.
	arrival *atomic.Int64
}

func (st *reqState) getConn(string) {
	st.getAt, st.gotAt, st.reused = time.Now(), time.Time{}, false
	st.arrival = nil
	st.firstByte.Store(false)
}

func (st *reqState) gotConn(info httptrace.GotConnInfo) {
	st.gotAt, st.reused = time.Now(), info.Reused
	st.arrival = arrivalOf(info.Conn)
}

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
