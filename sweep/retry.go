package sweep

import (
	"fmt"
	"slices"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Retries (DESIGN §3.4): a level excluded for steadiness or for the client's lateness is run
// again, with twice its window, before levels are added (sweep.retry_excluded times at most),
// and the retry supersedes it in the analysis.

// RetryWhy says why a level that ran under proto should be run again — it was excluded for
// steadiness (not steady, and not merely imprecise) or because the client was bound — or ""
// when it should not: it was steady or imprecise, interrupted or without a window, a shard's
// part, or it broke a stop rule that ends the sweep on the server's account — its errors
// above max_error_rate, its TTFT p95 above stop_ttft: a retry would fail alike. A rate level
// is retried only when client-bound: its steady-state verdict does not exclude it while its
// backlog grows (§4.15).
func RetryWhy(l *record.Level, proto Protocol) string {
	run := &l.Run
	if run.Interrupted || run.W1 <= run.W0 || run.Shard != nil || failedLikeServer(l, proto.Stop) {
		return ""
	}
	if cs := run.Client; cs != nil && cs.Bound {
		return "client-bound: " + cs.Reason
	}
	if run.Steady || run.Imprecise || run.Mode().IsRate() || run.NotSteadyReason == "" {
		return ""
	}
	return "not steady: " + run.NotSteadyReason
}

// failedLikeServer reports whether l's window broke the error-rate or stop_ttft stop rule
// (the analysis' StopRules.breach computes the same from its summary): the requests sent in
// the window that failed above max_error_rate, or their TTFT p95 above stop_ttft.
func failedLikeServer(l *record.Level, stop record.StopRules) bool {
	run := &l.Run
	var sent, failed int
	var ttft []float64
	for i := range l.Records {
		r := &l.Records[i]
		if !record.SentInWindow(r, run.W0, run.W1) {
			continue
		}
		sent++
		if !r.OK() && !r.UserCancelled() { // a user's cancel is no failure
			failed++
		} else if r.TTFT > 0 {
			ttft = append(ttft, float64(r.TTFT))
		}
	}
	if sent > 0 && float64(failed) > stop.MaxErrorRate*float64(sent) {
		return true
	}
	return stop.StopTTFT > 0 && len(ttft) > 0 && record.DurationPercentile(ttft, 95) > stop.StopTTFT
}

// retried reports whether a retry has run: the planned levels are then over.
func (r *controller) retried() bool {
	return slices.ContainsFunc(r.levels, func(l record.Level) bool { return l.Run.RetryOf != nil })
}

// nextRetry returns the position in levels of the first level to run again under proto — one
// RetryWhy names, not superseded by a retry already, retried fewer than proto.RetryExcluded
// times along its chain of retries — and why, or −1.
func nextRetry(levels []record.Level, proto Protocol) (int, string) {
	superseded := make(map[int]bool)
	depth := make(map[int]int) // by index: how many retries led to that level
	for _, l := range levels {
		if o := l.Run.RetryOf; o != nil {
			superseded[*o] = true
			depth[l.Run.Index] = depth[*o] + 1
		}
	}
	for i, l := range levels {
		if superseded[l.Run.Index] || depth[l.Run.Index] >= proto.RetryExcluded {
			continue
		}
		if why := RetryWhy(&levels[i], proto); why != "" {
			return i, why
		}
	}
	return -1, ""
}

// retryExcluded runs again, one at a time, every level nextRetry names, each with twice the
// window of the run it repeats, while the budget leaves room for it; it returns why it stopped
// early ("" when it did not; r.out.StopReason says when the sweep must stop). Once the budget
// has refused a retry, later calls (after an added level) run none and say nothing more. Not
// on a shard's schedule: kneecap merge judges the levels.
func (r *controller) retryExcluded() string {
	p := r.plan
	if p.Protocol.RetryExcluded <= 0 || p.Schedule != nil || r.noRetry {
		return ""
	}
	for {
		i, why := nextRetry(r.levels, p.Protocol)
		if i < 0 {
			return ""
		}
		prev := r.levels[i].Run
		scale := 2 * max(prev.WindowScale, 1)
		need := p.Protocol.Cooldown + p.Protocol.Warmup + p.Protocol.Duration*time.Duration(scale)
		x := runX(&prev)
		name := r.ex.name(x)
		if b := p.Protocol.Stop.Budget; b > 0 && time.Now().Add(need).Sub(r.budgetFrom) > b {
			r.noRetry = true
			return fmt.Sprintf("stop.budget leaves no time to run %s again", name)
		}
		index := prev.Index
		ask := levelAsk{index: len(r.levels), x: x, retryOf: &index, retryWhy: why, scale: scale}
		if r.out.StopReason = r.level(ask, len(r.out.Levels) == 0); r.out.StopReason != "" {
			if r.out.StopReason == StopBudget {
				r.out.StopReason, r.noRetry = "", true
				return fmt.Sprintf("stop.budget cut the retry of %s short", name)
			}
			return ""
		}
	}
}
