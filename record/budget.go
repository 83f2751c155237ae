package record

import (
	"fmt"
	"sync/atomic"
	"time"
)

// AnswerBudget is target.answer_budget (DESIGN §3.6): one deadline for every wait of a sweep
// before its server first answers — the preflight, the prompt sizing and the first level, until
// a request of that level streams its first content chunk. The waits before the first level end
// at half of it (Probes), the first level's unanswered requests are cut at nine tenths of it
// (Deadline), and the last tenth is left to write the records, the analysis and the report, so
// that a server that never answers ends the sweep within the budget. It is safe for concurrent
// use.
type AnswerBudget struct {
	// Budget is target.answer_budget; Start when the sweep began to wait (before the preflight).
	Budget time.Duration
	Start  time.Time
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

// Probes is when the waits before the first level end: half the budget from Start.
func (b *AnswerBudget) Probes() time.Time { return b.Start.Add(b.Budget / 2) }

// Deadline is when the first level's requests that have streamed no content are cut, and the
// level ends, if none of them has answered: nine tenths of the budget from Start.
func (b *AnswerBudget) Deadline() time.Time { return b.Start.Add(b.Budget / 10 * 9) }

// Answer records that the server answered: the budget no longer cuts anything.
func (b *AnswerBudget) Answer() {
	if !b.answered.Load() {
		b.answered.Store(true)
	}
}

// Answered reports whether the server has answered a request that carries the budget.
func (b *AnswerBudget) Answered() bool { return b.answered.Load() }

// Spent reports whether the budget ran out at now with no answer.
func (b *AnswerBudget) Spent(now time.Time) bool {
	return !b.Answered() && !now.Before(b.Deadline())
}

// String names the budget for a message: "target.answer_budget 1m30s".
func (b *AnswerBudget) String() string { return fmt.Sprintf("target.answer_budget %v", b.Budget) }
