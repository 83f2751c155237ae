package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/kneecap/kneecap/record"
)

// The answer budget (target.answer_budget, DESIGN §3.6): one deadline for every wait before the
// server first answers. It starts with Start; the preflight, the server-metrics and GPU probes,
// the prompt sizing and the server's info wait at most until its Probes time (half of it); the
// first level's requests carry it (sweep.Plan.AnswerBudget), and the level ends at its Deadline
// (nine tenths) unless one of them has streamed a token, leaving the last tenth to write the
// records, the analysis and the report.

// startBudget starts the answer budget of the configuration now (nil: off).
func (s *Sweep) startBudget() {
	s.budget = record.NewAnswerBudget(time.Now(), s.Cfg.Target.AnswerBudget)
}

// probesContext is ctx ending at the answer budget's Probes time, its cause naming the budget
// (ctx itself when the budget is off).
func (s *Sweep) probesContext(ctx context.Context) (context.Context, context.CancelFunc) {
	b := s.budget
	if b == nil {
		return ctx, func() {}
	}
	cause := fmt.Errorf("%s: the waits before the first level end at half of it (%v)", b, b.Budget/2)
	return context.WithDeadlineCause(ctx, b.Probes(), cause)
}

// preflightTimeout is the preflight's bound: timeout, or what is left of the waits before the
// first level when that is less, and how a message names the bound and the budget.
func (s *Sweep) preflightTimeout(timeout time.Duration) (time.Duration, string) {
	b := s.budget
	if b == nil {
		return timeout, ""
	}
	if left := time.Until(b.Probes()); left < timeout {
		return max(left, 0), fmt.Sprintf(" (half of %s)", b)
	}
	return timeout, fmt.Sprintf(" (the preflight's bound, within %s)", b)
}

// levelBudget is the answer budget the sweep's first level carries: none on a shard, whose
// first level waits for the schedule's start, nor once a request has answered it (the --rates
// auto probe's, which carries it first).
func (s *Sweep) levelBudget() *record.AnswerBudget {
	if s.schedule != nil || s.budget == nil || s.budget.Answered() {
		return nil
	}
	return s.budget
}
