package openai

import (
	"context"
	"errors"
	"time"

	"github.com/kneecap/kneecap/record"
)

// errUserCancel: the workload closed the stream on purpose (workload.cancel), as a user who
// leaves mid-answer does; the record is cancelled with class user_cancel, not an error.
var errUserCancel = errors.New("openai: the user left (workload.cancel)")

// leave readies the duration rule of req's cancel, if any: the request's context is cancelled
// After from t_send (sent, at GotConn), so that a wait for a pooled connection does not count
// toward it; a gateway that holds the response headers does, as the user's wait. Call it
// before arm.
func (w *watch) leave(c *record.Cancel) {
	if c != nil && c.After > 0 {
		w.userAfter = c.After
	}
}

// sent arms the duration rule's deadline, After from t_send, off after the watch's start (a
// retry's later connection moves it later): it re-arms the watch's timer for it, or starts one
// when no other deadline is on.
func (w *watch) sent(off time.Duration) {
	if w.userAfter <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over || w.draining {
		return
	}
	w.user = w.userAfter + off
	d := w.next(time.Since(w.start))
	if w.t == nil {
		w.t = time.AfterFunc(d, w.fire)
		return
	}
	w.t.Reset(d)
}

// leaveAfter is the token rule of req's cancel: the stream is closed once that many content
// chunks have arrived (0: never).
func leaveAfter(req *record.Request) int {
	if req.Cancel == nil {
		return 0
	}
	return req.Cancel.AfterTokens
}

// left closes the request's connection at once when the user left (err or the request
// context's cause is errUserCancel): closing the body would leave the close to the
// transport's read loop, a goroutine that may run after the worker has sent its next request,
// so that the server would see the new request before the old one's client going.
func (st *reqState) left(err error, reqCtx context.Context) {
	if st.conn != nil && (errors.Is(err, errUserCancel) || errors.Is(context.Cause(reqCtx), errUserCancel)) {
		_ = st.conn.Close()
	}
}

// userCancel records, on a request the workload cancelled (err or the request context's
// cause is errUserCancel), what it received as the user's cancel: not an error, so no error
// text. It reports whether it did.
func userCancel(rec *record.Record, err, cause error) bool {
	if !errors.Is(err, errUserCancel) && !errors.Is(cause, errUserCancel) {
		return false
	}
	rec.Status, rec.ErrorClass, rec.Error = record.StatusCancelled, record.ErrUserCancel, ""
	return true
}
