package openai

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Cancellation causes of a request the client ends itself.
var (
	// errRequestTimeout: the request ran past Options.RequestTimeout.
	errRequestTimeout = errors.New("openai: request timeout")
	// errTTFTTimeout: no content chunk within Options.TTFTTimeout of the send.
	errTTFTTimeout = errors.New("openai: ttft timeout")
	// errStallTimeout: no content chunk, nor part of a tool call, for Options.StallTimeout
	// after the first content chunk (other events — keepalives, role or usage chunks — do not
	// hold it off).
	errStallTimeout = errors.New("openai: stall timeout")
	// errDrainTimeout: the body did not end within drainTimeout of "data: [DONE]".
	errDrainTimeout = errors.New("openai: drain timeout")
	// errAnswerBudget: no content chunk by the answer budget's deadline, and no other request
	// carrying the budget had one either (record.AnswerBudget).
	errAnswerBudget = errors.New("openai: answer budget")
	// errStreamBound: the stream ran past its time bound after its first content chunk
	// (overlong.go).
	errStreamBound = errors.New("openai: stream bound")
)

// watch enforces one request's deadlines: request_timeout from its start, ttft_timeout and the
// answer budget's deadline until its first content chunk, stall_timeout between content chunks
// (or parts of a tool call) and the stream's time bound (overlong.go) after that, the drain's
// bound after [DONE], and the user's cancel (workload.cancel's after; leave.go). It costs one
// timer per request, re-armed only when it fires (at most once per stall_timeout), never per
// chunk: the reading goroutine publishes its progress with one atomic store per event
// (event), and the timer's callback (fire) compares it with the deadlines and cancels the
// request's context with the cause.
type watch struct {
	start                 time.Time
	request, ttft, stall  time.Duration // 0 = off
	cancel                context.CancelCauseFunc
	first                 atomic.Int64 // offset from start of the first content chunk + 1; 0 = none yet
	last                  atomic.Int64 // offset from start of the latest content chunk or tool-call part
	mu                    sync.Mutex   // guards t, draining and over against fire
	t                     *time.Timer  // nil when every deadline is off
	draining, over        bool
	requestAt, drainUntil time.Duration // offsets from start
	// user is the deadline of workload.cancel's duration rule (offset from start, 0 = off),
	// userAfter the rule's After (leave.go); user is guarded by mu once armed.
	user, userAfter time.Duration
	// budget is the request's answer budget (nil: none), budgetAt its deadline (offset from
	// start); long the stream's time bound after its first content chunk (0 = off). Set
	// before arm.
	budget   *record.AnswerBudget
	budgetAt time.Duration
	long     time.Duration
}

// arm starts the watch of a request started at start whose context cancel ends; with every
// deadline off it arms nothing.
func (w *watch) arm(start time.Time, request, ttft, stall time.Duration, cancel context.CancelCauseFunc) {
	w.start, w.request, w.ttft, w.stall, w.cancel = start, request, ttft, stall, cancel
	next := w.next(0)
	if next < 0 {
		return
	}
	w.mu.Lock() // fire must see t
	w.t = time.AfterFunc(next, w.fire)
	w.mu.Unlock()
}

// event records a stream event at offset since (from start); content marks a content chunk,
// progress a part of a tool call (chunkResult.progress). Only these restart the stall clock: a
// server that sends keepalives and no tokens has stalled, one that streams a tool's arguments
// has not. Only a content chunk is the first token (TTFT) and answers the budget.
func (w *watch) event(since time.Duration, content, progress bool) {
	if !content && !progress {
		return
	}
	w.last.Store(int64(since))
	if content && w.first.Load() == 0 {
		w.first.Store(int64(since) + 1)
		if w.budget != nil {
			w.budget.Answer()
		}
	}
}

// unanswered reports whether the answer budget may still cut the request: it has one, no
// content chunk yet, and no request carrying it has answered.
func (w *watch) unanswered(first int64) bool {
	return w.budget != nil && first == 0 && !w.budget.Answered()
}

// next returns how long after now (an offset from start) the watch must look again, or a
// negative duration when no deadline is on. A deadline already passed gives 0.
func (w *watch) next(now time.Duration) time.Duration {
	due := time.Duration(-1)
	at := func(d time.Duration) {
		if due < 0 || d < due {
			due = d
		}
	}
	if w.request > 0 {
		at(w.request)
	}
	if w.user > 0 {
		at(w.user)
	}
	switch first := w.first.Load(); {
	case first == 0 && w.ttft > 0:
		at(w.ttft)
	case first == 0 && w.stall > 0:
		at(now + w.stall) // no ttft_timeout: look again, the stall clock starts at the first token
	case w.stall > 0:
		at(time.Duration(w.last.Load()) + w.stall)
	}
	switch first := w.first.Load(); {
	case w.unanswered(first):
		at(max(w.budgetAt, 0)) // a deadline passed at the send cuts at once
	case w.long > 0 && first == 0:
		at(now + w.long) // look again: the bound counts from the first content chunk
	case w.long > 0:
		at(time.Duration(first-1) + w.long)
	}
	if due < 0 {
		return due
	}
	return max(due-now, 0)
}

// fire is the timer's callback: it cancels the request when a deadline has passed, else
// re-arms the timer for the next one.
func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return
	}
	now := time.Since(w.start)
	var cause error
	first := w.first.Load()
	switch {
	case w.draining:
		if now >= w.drainUntil {
			cause = errDrainTimeout
		}
	case w.request > 0 && now >= w.request:
		cause = errRequestTimeout
	case w.user > 0 && now >= w.user:
		cause = errUserCancel
	case w.unanswered(first) && now >= w.budgetAt:
		cause = errAnswerBudget
	case first != 0 && w.long > 0 && now >= time.Duration(first-1)+w.long:
		cause = errStreamBound
	case first == 0 && w.ttft > 0 && now >= w.ttft:
		cause = errTTFTTimeout
	case first != 0 && w.stall > 0 && now >= time.Duration(w.last.Load())+w.stall:
		cause = errStallTimeout
	}
	if cause != nil {
		w.over = true
		w.cancel(cause)
		return
	}
	d := w.drainUntil - now
	if !w.draining {
		d = w.next(now)
	}
	w.t.Reset(d)
}

// drain bounds what is left of the request, the read of its body after [DONE], by d.
func (w *watch) drain(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.draining, w.drainUntil = true, time.Since(w.start)+d
	if w.t == nil {
		w.t = time.AfterFunc(d, w.fire)
		return
	}
	w.t.Reset(d)
}

// stop ends the watch: the timer never fires again.
func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.over = true
	if w.t != nil {
		w.t.Stop()
	}
}
