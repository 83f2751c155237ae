package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/kneecap/kneecap/record"
)

// Users who cancel (workload.cancel, DESIGN §1, §4.19): a request the workload closed early
// on purpose (record.Record.UserCancelled) is no error. It is left out of the error rate and
// the error classes; the tokens it received count toward output TPS (every record's do); its
// TTFT joins the TTFT statistics when it had a first token; TPOT, E2E, ITL, QPS, goodput and
// the mean output length are the completed (ok) requests'. Little's law counts it as a
// departure (cancelTally.finish), and a level whose requests the users all left after a
// first token still had answers (validity's anyOK).

// Cancelled is a level's user cancels: how many of its latency population the workload
// cancelled, and their share of it.
type Cancelled struct {
	// Count is the user-cancelled requests among Level.Requests.
	Count int `json:"count"`
	// Share is Count ÷ Requests (null without requests).
	Share Float `json:"share"`
	// MeanOutputTokens is the mean N_out of the requests served, the successful and the
	// user-cancelled ones (null when unknown, and from a level-summary CSV): the
	// denominator of the completion rate (Level.CompletionRate).
	MeanOutputTokens Float `json:"mean_output_tokens"`
}

// servedOutputTokens is the mean N_out of the level's requests served: with user cancels the
// completed and the cancelled ones, else the completed ones (MeanOutputTokens).
func (l *Level) servedOutputTokens() Float {
	if c := l.Cancelled; c != nil && c.MeanOutputTokens.OK() {
		return c.MeanOutputTokens
	}
	return l.MeanOutputTokens
}

// CancelResult is a run's statement on its user cancels: whether the server freed the
// cancelled requests' slots, read from its running count (vllm:num_requests_running and the
// like, DESIGN §3.7): freed when no closed-loop level with cancels saw more requests running
// than its concurrency (a request the server kept running after its client left would add to
// the new ones the client sends in its place).
type CancelResult struct {
	// Cancelled counts the user-cancelled requests in every level's latency population.
	Cancelled int `json:"cancelled"`
	// SlotsFreed is true when the server freed the slots, false when a level's running count
	// exceeded its concurrency, null when it could not be checked (no running count scraped,
	// or no closed-loop level with cancels).
	SlotsFreed *bool `json:"slots_freed"`
	// Exceeded lists the concurrencies of the levels whose running count exceeded them.
	Exceeded []int `json:"exceeded,omitempty"`
	// Statement says it in a sentence, for the reports.
	Statement string `json:"statement"`
}

// markCancels gives every level its Cancelled, zero where it had none, when any level of the
// run has a user cancel; a run without them keeps the key absent.
func markCancels(out []Level) {
	if !slices.ContainsFunc(out, func(lv Level) bool { return lv.Cancelled != nil }) {
		return
	}
	for i := range out {
		if out[i].Cancelled == nil {
			out[i].Cancelled = cancelledOf(0, out[i].Requests)
		}
	}
}

// cancelledOf is the Cancelled of n user cancels among requests.
func cancelledOf(n, requests int) *Cancelled {
	c := &Cancelled{Count: n, Share: NaN(), MeanOutputTokens: NaN()}
	if requests > 0 {
		c.Share = Float(float64(n) / float64(requests))
	}
	return c
}

// cancels sets the result's statement on user cancels and warns when the server did not
// free the slots or the run could not tell; a run without user cancels has none.
func (a *analyzer) cancels() {
	var (
		res      CancelResult
		checked  bool
		exceeded []*Level
		any      bool
	)
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		if lv.Cancelled == nil {
			continue
		}
		any = true
		res.Cancelled += lv.Cancelled.Count
		if lv.Cancelled.Count == 0 || lv.IsRate() || lv.Superseded || lv.Server == nil || !lv.Server.MaxRunning.OK() {
			continue
		}
		checked = true
		if float64(lv.Server.MaxRunning) > float64(lv.Concurrency) {
			exceeded = append(exceeded, lv)
		}
	}
	if !any {
		return
	}
	switch {
	case len(exceeded) > 0:
		freed := false
		res.SlotsFreed = &freed
		for _, l := range exceeded {
			res.Exceeded = append(res.Exceeded, l.Concurrency)
		}
		res.Statement = fmt.Sprintf("the server did not free the slots of cancelled requests at once: its running count exceeded the concurrency at %s",
			levelsAt(exceeded, func(l *Level) string { return "max running " + fconcurrency(float64(l.Server.MaxRunning)) }))
		a.warn(cancelNotFreed(res.Statement))
	case checked:
		freed := true
		res.SlotsFreed = &freed
		res.Statement = "the server freed the slots of cancelled requests: its running count never exceeded a level's concurrency"
	default:
		res.Statement = "whether the server freed the slots of cancelled requests could not be checked: no running count was scraped from its metrics at a closed-loop level with cancels"
		a.warn(cancelUnchecked(res.Statement))
	}
	a.res.Cancels = &res
}

// cancelTally is what a level's user cancels add to its summary: the count in the latency
// population (and those that had a first token: a level whose every request the users left
// after one was answered), and for Little's law the departures in the window and the E2E of those sent
// in it.
type cancelTally struct {
	count, departed int
	answered        int     // of the counted ones, those that had a first token
	e2eMS           float64 // Σ E2E of the counted ones, in ms
	outputTokens    float64 // Σ N_out of the counted ones
}

// add tallies r, any record of the level, over the window [w0, w1) with in the latency
// population's test; it reports whether r is a user cancel.
func (c *cancelTally) add(r *record.Record, w0, w1 int64, in bool) bool {
	if !r.UserCancelled() {
		return false
	}
	if d := r.Done(); d >= w0 && d < w1 {
		c.departed++
	}
	if in {
		c.count++
		c.e2eMS += float64(r.E2E) / 1e6
		c.outputTokens += float64(r.OutputTokens)
		if r.TTFT > 0 {
			c.answered++
		}
	}
	return true
}

// finish sets lv's Cancelled (with the mean N_out of the requests served) and its
// Little's-law error with the user cancels as departures
// too: λ counts
// the completed and the cancelled requests that left in the window, W their mean E2E over
// the population (ok ones in s.e2e).
func (c *cancelTally) finish(lv *Level, s *scratch, windowS float64) {
	n := float64(lv.AchievedConcurrency)
	if c.count == 0 {
		return
	}
	lv.Cancelled = cancelledOf(c.count, lv.Requests)
	ok := lv.Requests - lv.Errors - c.count
	switch {
	case ok == 0:
		lv.Cancelled.MeanOutputTokens = Float(c.outputTokens / float64(c.count))
	case lv.MeanOutputTokens.OK():
		lv.Cancelled.MeanOutputTokens = Float((float64(lv.MeanOutputTokens)*float64(ok) + c.outputTokens) / float64(ok+c.count))
	}
	if !(n > 0) || !(windowS > 0) {
		return
	}
	sum := c.e2eMS
	for _, e := range s.e2e {
		sum += e
	}
	w := sum / float64(len(s.e2e)+c.count) / 1e3
	lambda := float64(lv.QPS) + float64(c.departed)/windowS
	lv.LittlesLawError = Float(math.Abs(lambda*w-n) / n)
}
