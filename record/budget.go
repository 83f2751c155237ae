package record

import (
	"fmt"
	"sync/atomic"
	"time"
)

// AnswerBudget is target.answer_budget (DESIGN §3.6): how long every wait of a sweep before its
// server first answers may go without an answer — the preflight, the prompt sizing and the
// first level, until a request of that level streams its first content chunk. Its clock starts
// at Start and starts again at each answer before the first level (Heard: the preflight's
// probe, a sizing probe), so that a slow but answering server keeps the whole allowance for
// its first level while a server that never answers ends the sweep within the budget. Each wait
// before the first level ends at half of it from the last answer (Probes), the first level's
// unanswered requests are cut at nine tenths of it (Deadline), and the last tenth is left to
// write the records, the analysis and the report. It is safe for concurrent use.
type AnswerBudget struct {
	// Budget is target.answer_budget; Start when the sweep began to wait (before the preflight).
	Budget time.Duration
	Start  time.Time
	// heard is the offset from Start of the latest answer before the first level (Heard; 0:
	// none), kept as an offset so that the deadlines stay on the monotonic clock.
	heard atomic.Int64
	// answered is set by the first content chunk of a request that carries the budget.
	answered atomic.Bool
}

// NewAnswerBudget returns the answer budget of budget from start; nil when budget is not
// positive (off).
func NewAnswerBudget(start time.Time, budget time.Duration) *AnswerBudget {
	if budget <= 0 {
		return nil
	}
	return &AnswerBudget{Budget: budget, Start: start}
}

// Heard records that the server answered a wait before the first level at now: the budget's
// clock starts again from there.
func (b *AnswerBudget) Heard(now time.Time) {
	n := int64(now.Sub(b.Start))
	for {
		was := b.heard.Load()
		if n <= was || b.heard.CompareAndSwap(was, n) {
			return
		}
	}
}

// From is when the budget's clock last started: the latest answer Heard, else Start.
func (b *AnswerBudget) From() time.Time {
	return b.Start.Add(time.Duration(b.heard.Load()))
}

// Probes is when a wait before the first level that begins now ends: half the budget from
// From.
func (b *AnswerBudget) Probes() time.Time { return b.From().Add(b.Budget / 2) }

// Deadline is when the first level's requests that have streamed no content are cut, and the
// level ends, if none of them has answered: nine tenths of the budget from From.
func (b *AnswerBudget) Deadline() time.Time { return b.From().Add(b.Budget / 10 * 9) }

// Answer records that the server answered: the budget no longer cuts anything.
func (b *AnswerBudget) Answer() {
	if !b.answered.Load() {
		b.answered.Store(true)
	}
}

// Answered reports whether the server has answered a request that carries the budget.
func (b *AnswerBudget) Answered() bool { return b.answered.Load() }

// Unheard reports whether the server has answered nothing at all: no wait before the first
// level (Heard), no request that carries the budget (Answer).
func (b *AnswerBudget) Unheard() bool { return !b.Answered() && b.heard.Load() == 0 }

// Spent reports whether the budget ran out at now with no answer.
func (b *AnswerBudget) Spent(now time.Time) bool {
	return !b.Answered() && !now.Before(b.Deadline())
}

// Answers reports whether r is an answer of the server for the budget (Heard, Answer): the
// server sent a response, whatever it said. It succeeded, or it failed by what the server
// sent (http_4xx, http_429, http_5xx, redirect, empty, bad_chunk, overlong, stream_broken),
// which the stop rules then judge instead of the budget's silence; only a request that heard
// nothing is no answer: timeout, connect, cancelled, client, and a user_cancel before its
// first token (workload.cancel's duration rule closes it whether the server spoke or not). A stream_broken record does not
// say whether the response's headers had arrived, so it counts as an answer: a server that
// cuts every connection fails fast, and the error rate stops it.
func Answers(r *Record) bool {
	if r.OK() {
		return true
	}
	switch r.ErrorClass {
	case ErrTimeout, ErrConnect, ErrCancelled, ErrClient, "":
		return false
	case ErrUserCancel:
		return r.TTFT > 0 // closed by its user: an answer only once a token had come
	}
	return true
}

// String names the budget for a message: "target.answer_budget 1m30s".
func (b *AnswerBudget) String() string { return fmt.Sprintf("target.answer_budget %v", b.Budget) }
