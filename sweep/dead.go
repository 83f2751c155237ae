package sweep

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/kneecap/kneecap/record"
)

// A server that stops answering (DESIGN §3.2): a worker whose requests fail backs off; a level none of whose workers can reach the server, or whose warmup got no answer at
// all, ends at once and stops the sweep, instead of filling records.jsonl with failures or
// waiting out warmup_max, max_duration and drain_timeout.

// Backoff of a worker's consecutive failed requests: base doubling per failure up to the cap,
// jittered (failureBackoff). The base bounds a closed-loop worker at a server that fails every
// request at once (a 500, a 429, an empty 200, a refused connection) to 1/base requests/s.
const (
	failureBackoffBase = 100 * time.Millisecond
	failureBackoffMax  = time.Second
)

// DefaultUnreachableAfter is Plan.UnreachableAfter's default: how long every worker of a
// level may fail to connect before the server is declared unreachable.
const DefaultUnreachableAfter = 10 * time.Second

// budgetDrain bounds the drain of a level the answer budget ended: its requests' own watches
// cut every one of them at the budget's deadline, so the drain waits for their records
// (classified timeout) rather than cancelling them.
const budgetDrain = time.Second

// InterruptDrainTimeout bounds the drain once an interrupt has come (during the load or the
// drain itself), whatever drain_timeout says: the operator wants the sweep to stop.
const InterruptDrainTimeout = 5 * time.Second

// Stop reasons of a server that stopped answering; each is followed by ": " and the level's
// account.
const (
	// StopUnreachable: no request of a level could connect for Plan.UnreachableAfter.
	StopUnreachable = "server unreachable"
	// StopSilent: every worker's first request of a level timed out and none was answered,
	// or the answer budget ran out on the first level before any was (DESIGN §3.6).
	StopSilent = "no answer"
	// StopOverlong: every worker's first request of a level streamed past its max_tokens
	// (class overlong) and none was answered within it: the server ignores max_tokens.
	StopOverlong = "overlong streams"
)

// budgetSpent is the account of a first level that the answer budget b ended: what waited for
// a first token, for how long, and what to do about a server only slow to answer.
func budgetSpent(b *record.AnswerBudget) string {
	who, since := "the preflight, the prompt sizing and this level", b.Start
	if from := b.From(); from.After(b.Start) {
		who, since = "this level (after the server's last answer, to the preflight or the prompt sizing)", from
	}
	return fmt.Sprintf("no request was answered within %s: %s waited %s for a first token; "+
		"if the server is only slow to its first token, raise target.answer_budget (0 = off)",
		b, who, time.Since(since).Round(100*time.Millisecond))
}

// failureBackoff is a worker's pause after its n-th consecutive failed request (0 for n ≤ 0):
// 100 ms doubling to 1 s, drawn uniformly from [1, 1.5] of that so that the workers of a level
// do not retry in step and none sends more than 10 requests/s to a failing server.
func failureBackoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := failureBackoffMax
	if n <= 30 {
		d = min(failureBackoffBase<<(n-1), failureBackoffMax)
	}
	return d + rand.N(d/2+1)
}

// health is the account of whether the level's server answers. The workers keep the
// answered, firstTimeouts, firstTimeout and rateDown fields as each request ends (ended,
// rateEnded), before their first request counts as done, so that the controller reads them
// at the end of warmup before it collects; the controller keeps the others as it collects.
type health struct {
	answered      atomic.Bool            // a request of the level succeeded
	firstTimeouts atomic.Int64           // workers whose first request (seq 0) timed out
	firstTimeout  atomic.Pointer[string] // the message of the first of them
	// firstOverlongs counts the workers whose first request streamed past its max_tokens,
	// firstOverlong the message of the first of them.
	firstOverlongs atomic.Int64
	firstOverlong  atomic.Pointer[string]
	// rateDown is, on a rate level, the end (Unix ns) of the first connect error of the
	// level's current run of them, 0 when none: the level's health is the level's, not a
	// slot's, since each arrival may take a slot that never sent a request (rateEnded).
	rateDown atomic.Int64

	lastConnect string // the message of the latest connect error collected
	// downSince is, when every worker's latest requests failed to connect, the time (Unix ns)
	// since which all of them have (the latest start of a worker's run of connect errors);
	// 0 otherwise.
	downSince int64
}

// ended accounts, in the worker's goroutine, for the end of request r, first reporting one
// of the first requests that silence counts (a worker's first; a rate level's first arrivals).
// A timeout after a content chunk (a stall, the stream's time bound) is no silence: the server
// answered, slowly.
func (h *health) ended(r *record.Record, first bool) {
	switch {
	case r.OK(), r.UserCancelled() && r.TTFT > 0: // a user's cancel after a token: answered
		if !h.answered.Load() {
			h.answered.Store(true)
		}
	case r.ErrorClass == record.ErrTimeout && first && r.TTFT == 0:
		countFirst(&h.firstTimeouts, &h.firstTimeout, r)
	case r.ErrorClass == record.ErrOverlong && first:
		countFirst(&h.firstOverlongs, &h.firstOverlong, r)
	}
}

// countFirst counts r in n, keeping the message of the first so counted in msg.
func countFirst(n *atomic.Int64, msg *atomic.Pointer[string], r *record.Record) {
	m := r.Error
	msg.CompareAndSwap(nil, &m)
	n.Add(1)
}

// rateEnded accounts, in an arrival's goroutine, for the end of a rate level's request r in
// the level-wide run of connect errors: a connect error starts the run if none is current; a
// request that connected ends it when it was sent after the run started (one sent before
// connected before the errors and says nothing of the server since).
func (h *health) rateEnded(r *record.Record) {
	if r.ErrorClass == record.ErrConnect {
		h.rateDown.CompareAndSwap(0, r.Done())
		return
	}
	if d := h.rateDown.Load(); d != 0 && r.Sent >= d {
		h.rateDown.CompareAndSwap(d, 0)
	}
}

// add accounts, in the controller, for one collected record.
func (h *health) add(r *record.Record) {
	if r.ErrorClass == record.ErrConnect {
		h.lastConnect = r.Error
	}
}

// dead reports whether the level must end because its server does not answer, with the
// level's account of why: unreachable when no worker's request has connected for
// unreachableAfter, silent when every worker's first request (a rate level's first silentN
// arrivals) timed out and none of the level's requests succeeded — in warmup or after it:
// a rate level's warmup ends at its first completed request, which may be the first timeout —
// or when the answer budget ran out on the first level before any request answered; overlong
// when every worker's first request streamed past its max_tokens and none succeeded.
func (l *level) dead() (levelEnd, string) {
	h := &l.health
	who, first := "every worker's requests", "every worker's first request"
	if l.run.Mode().IsRate() {
		who, first = "every request", fmt.Sprintf("the level's first %d arrivals", l.silentN)
	}
	if h.downSince != 0 && time.Duration(l.clk.now()-h.downSince) >= l.unreachableAfter {
		return endUnreachable, fmt.Sprintf("no request reached the server for %s: %s failed to connect (%s)",
			l.unreachableAfter, who, h.lastConnect)
	}
	if l.silentN > 0 && h.firstTimeouts.Load() >= l.silentN && !h.answered.Load() {
		return endSilent, fmt.Sprintf("%s timed out and none was answered (%s)", first, *h.firstTimeout.Load())
	}
	if b := l.budget; b != nil && b.Spent(time.Now()) {
		l.budgetSpent = true
		return endSilent, budgetSpent(b)
	}
	if l.silentN > 0 && h.firstOverlongs.Load() >= l.silentN && !h.answered.Load() {
		return endOverlong, fmt.Sprintf("%s streamed past max_tokens and none ended within it (%s). "+
			"Make the server honour max_tokens (a proxy in front of it may drop the field; target.extra_body can send the one it reads, such as max_completion_tokens), then run again",
			first, *h.firstOverlong.Load())
	}
	return endNormal, ""
}
