package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// The answer budget (target.answer_budget, DESIGN §3.6): how long every wait before the server
// first answers may go without an answer. It starts with Start, and starts again at each answer
// before the first level (heard: the preflight's probe, each tokenize count and usage probe of
// the sizing). The preflight, the server-metrics and GPU probes and each sizing probe wait at
// most until its Probes time (half of it after the last answer), each under its own context;
// the first level's requests carry it (sweep.Plan.AnswerBudget), and the level ends at its
// Deadline (nine tenths) unless one of them has streamed a token, leaving the last tenth to
// write the records, the analysis and the report.

// startBudget starts the answer budget of the configuration now (nil: off).
func (s *Sweep) startBudget() {
	s.budget = record.NewAnswerBudget(time.Now(), s.Cfg.Target.AnswerBudget)
}

// probesContext is ctx ending at the answer budget's Probes time, its cause naming the budget
// (ctx itself when the budget is off). Each wait before the first level takes its own when it
// begins, so that an answer before it gives it half the budget again.
func (s *Sweep) probesContext(ctx context.Context) (context.Context, context.CancelFunc) {
	b := s.budget
	if b == nil {
		return ctx, func() {}
	}
	cause := fmt.Errorf("%s: a wait before the first level ends at half of it (%v) without an answer", b, b.Budget/2)
	return context.WithDeadlineCause(ctx, b.Probes(), cause)
}

// heard records an answer of the server before the first level: the budget's clock starts
// again (record.AnswerBudget.Heard).
func (s *Sweep) heard() {
	if s.budget != nil {
		s.budget.Heard(time.Now())
	}
}

// budgetClient is the client of the sizing's usage probes: each probe waits under its own
// probesContext, and its answer is heard.
type budgetClient struct {
	record.Client
	s *Sweep
}

// Do sends req under its own probesContext and hears its answer.
func (c budgetClient) Do(ctx context.Context, req *record.Request, rec *record.Record) {
	ctx, cancel := c.s.probesContext(ctx)
	defer cancel()
	c.Client.Do(ctx, req, rec)
	if record.Answers(rec) {
		c.s.heard()
	}
}

// budgetCounter is a sizing counter of the server's (its tokenize endpoint): each count waits
// under its own probesContext, and its answer is heard.
type budgetCounter struct {
	workload.TokenCounter
	s *Sweep
}

// CountTokens counts text under its own probesContext and hears the answer.
func (c budgetCounter) CountTokens(ctx context.Context, text string) (int, error) {
	ctx, cancel := c.s.probesContext(ctx)
	defer cancel()
	n, err := c.TokenCounter.CountTokens(ctx, text)
	if err == nil {
		c.s.heard()
	}
	return n, err
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
