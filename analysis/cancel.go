package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/record"
)

// Users who cancel (workload.cancel, DESIGN §1, §4.19): a request the workload closed early
// on purpose (record.Record.UserCancelled) is no error. It is left out of the error rate and
// the error classes; the tokens it received count toward output TPS (as a cancelled or successful request's do,
// record.Record.CountsTokens); its
// TTFT joins the TTFT statistics when it had a first token; TPOT, E2E, ITL, QPS, goodput and
// the mean output length are the completed (ok) requests', the survivors'. Those cancelled
// before a first token are the slowest: more than ttftCensoredMax of them make the level's
// TTFT percentiles lower bounds (cancelTally.censored). Little's law counts it as a
// departure (cancelTally.finish), and a level whose requests the users all left after a
// first token still had answers (validity's anyOK).

// UserCancelled is a level's user cancels: how many of its latency population the workload
// cancelled, and their share of it.
type UserCancelled struct {
	// Count is the user-cancelled requests among Level.Requests.
	Count int `json:"count"`
	// Share is Count ÷ Requests (null without requests).
	Share Float `json:"share"`
	// BeforeFirstToken is those of Count cancelled before their first token: no TTFT, so the
	// TTFT statistics leave them out, and they are the slowest (0 from a level-summary CSV).
	BeforeFirstToken int `json:"before_first_token"`
	// TTFTLowerBound is set when BeforeFirstToken is more than ttftCensoredMax of the TTFT
	// population (those with a TTFT and those): the level's TTFT percentiles are lower bounds.
	TTFTLowerBound bool `json:"ttft_lower_bound,omitempty"`
	// MeanOutputTokens is the mean N_out of the requests served, the successful and the
	// user-cancelled ones (null when unknown, and from a level-summary CSV): the
	// denominator of the completion rate (Level.CompletionRate).
	MeanOutputTokens Float `json:"mean_output_tokens"`
}

// servedOutputTokens is the mean N_out of the level's requests served: with user cancels the
// completed and the cancelled ones, else the completed ones (MeanOutputTokens).
func (l *Level) servedOutputTokens() Float {
	if c := l.UserCancelled; c != nil && c.MeanOutputTokens.OK() {
		return c.MeanOutputTokens
	}
	return l.MeanOutputTokens
}

// CancelResult is a run's statement on its user cancels: whether the server freed the
// cancelled requests' slots, read from its running count (vllm:num_requests_running and the
// like, DESIGN §3.7). A request the server kept running after its client left adds to the new
// ones the client sends in its place, so a closed-loop level's running count goes over its
// concurrency. Only a level whose running count could show it is judged (slotsJudged): below
// the server's slot limit, or with no request waiting. An excess of one is one scrape's
// timing (the client's next request arrives before the server drops the left one), so the
// evidence is an excess of more than one; the scrape summary keeps the largest count only.
type CancelResult struct {
	// UserCancelled counts the user-cancelled requests in every level's latency population.
	UserCancelled int `json:"user_cancelled"`
	// SlotsFreed is true when no level judged showed the excess, false when one did, null
	// when no level could be judged (no running count scraped, no closed-loop level with
	// cancels, or every one at or above the server's slot limit with requests waiting).
	SlotsFreed *bool `json:"slots_freed"`
	// Exceeded lists the concurrencies of the levels whose running count exceeded them.
	Exceeded []int `json:"exceeded,omitempty"`
	// Statement says it in a sentence, for the reports.
	Statement string `json:"statement"`
}

// markCancels gives every level its UserCancelled, zero where it had none, when any level of the
// run has a user cancel; a run without them keeps the key absent.
func markCancels(out []Level) {
	if !slices.ContainsFunc(out, func(lv Level) bool { return lv.UserCancelled != nil }) {
		return
	}
	for i := range out {
		if out[i].UserCancelled == nil {
			out[i].UserCancelled = cancelledOf(0, out[i].Requests)
		}
	}
}

// ttftCensoredMax is the share of a level's TTFT population that may leave before a first
// token with its TTFT percentiles still read as measured: above it the p95 may be one of the
// requests whose TTFT is not known (DESIGN §1).
const ttftCensoredMax = 0.05

// cancelledOf is the UserCancelled of n user cancels among requests.
func cancelledOf(n, requests int) *UserCancelled {
	c := &UserCancelled{Count: n, Share: NaN(), MeanOutputTokens: NaN()}
	if requests > 0 {
		c.Share = Float(float64(n) / float64(requests))
	}
	return c
}

// cancels sets the result's statement on user cancels and warns when the server's running
// count suggests it kept cancelled requests running, or when a run with server metrics could
// not tell (one without them, a level-summary CSV among them, is told in the statement only);
// a run without user cancels has none.
func (a *analyzer) cancels() {
	var (
		res                          CancelResult
		judged, exceeded, censored   []*Level
		any, scraped, closed, capped bool
	)
	limit := slotLimit(a.res.Meta.Server)
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		if lv.UserCancelled == nil {
			continue
		}
		any = true
		res.UserCancelled += lv.UserCancelled.Count
		if lv.UserCancelled.TTFTLowerBound && !lv.Superseded {
			censored = append(censored, lv)
		}
		scraped = scraped || lv.Server != nil
		if lv.UserCancelled.Count == 0 || lv.IsRate() || lv.Superseded {
			continue
		}
		closed = true
		switch {
		case lv.Server == nil || !lv.Server.MaxRunning.OK():
		case !slotsJudged(lv, limit):
			capped = true
		default:
			judged = append(judged, lv)
			if float64(lv.Server.MaxRunning) > float64(lv.Concurrency)+1 {
				exceeded = append(exceeded, lv)
			}
		}
	}
	if !any {
		return
	}
	if len(censored) > 0 {
		a.warn(cancelTTFTLowerBound(levelsAt(censored, func(l *Level) string {
			return fmt.Sprintf("%d of %d requests", l.UserCancelled.BeforeFirstToken, l.Requests)
		})))
	}
	maxRunning := func(l *Level) string { return "max running " + fconcurrency(float64(l.Server.MaxRunning)) }
	switch {
	case len(exceeded) > 0:
		freed := false
		res.SlotsFreed = &freed
		for _, l := range exceeded {
			res.Exceeded = append(res.Exceeded, l.Concurrency)
		}
		res.Statement = fmt.Sprintf("the server's running count exceeded the level's requests by more than one at %s while users cancelled: it may keep generating for clients that left",
			levelsAt(exceeded, maxRunning))
		a.warn(cancelNotFreed(res.Statement))
	case len(judged) > 0:
		freed := true
		res.SlotsFreed = &freed
		res.Statement = fmt.Sprintf("the server's running count stayed within one of the level's requests at %s while users cancelled: it freed their slots",
			levelsAt(judged, maxRunning))
	default:
		res.Statement = "whether the server freed the slots of cancelled requests could not be checked: " + uncheckedWhy(closed, capped)
		if scraped { // a level-summary CSV, or a run without --metrics, carries no running count
			a.warn(cancelUnchecked(res.Statement))
		}
	}
	a.res.Cancels = &res
}

// uncheckedWhy says why no level could be judged: no closed-loop level with cancels (closed),
// every one at or above the server's slot limit with requests waiting (capped), or no running
// count scraped.
func uncheckedWhy(closed, capped bool) string {
	switch {
	case !closed:
		return "no closed-loop level had cancels (an open loop has no fixed number of requests to read the running count against)"
	case capped:
		return "every closed-loop level with cancels was at or above the server's slot limit with requests waiting, where the running count cannot go over the level's requests"
	default:
		return "no running count was scraped from its metrics at a closed-loop level with cancels"
	}
}

// slotsJudged reports whether lv's running count could show a request kept running after its
// client left: the server runs more requests than lv's concurrency (its slot limit, when it
// said it, is above it), or none of lv's requests waited (the running count was not capped).
func slotsJudged(lv *Level, limit int) bool {
	if limit > 0 && lv.Concurrency < limit {
		return true
	}
	return lv.Server.MaxWaiting.OK() && lv.Server.MaxWaiting == 0
}

// slotLimit is the most requests the server says it runs at once (vLLM's and the
// simulator's max_num_seqs, SGLang's max_running_requests, TGI's max_concurrent_requests,
// llama.cpp's total_slots), or 0 when it does not say.
func slotLimit(info *record.ServerInfo) int {
	if info == nil {
		return 0
	}
	for _, k := range []string{"max_num_seqs", "max_running_requests", "max_concurrent_requests", "total_slots"} {
		if n, err := strconv.Atoi(info.Settings[k]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// cancelTally is what a level's user cancels add to its summary: the count in the latency
// population (and those that had a first token: a level whose every request the users left
// after one was answered), and for Little's law the departures in the window and the E2E of the
// counted ones.
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

// finish sets lv's UserCancelled (with the mean N_out of the requests served) and its
// Little's-law error with the user cancels as departures
// too: λ counts
// the completed and the cancelled requests that left in the window, W their mean E2E over
// the population (ok ones in s.e2e).
func (c *cancelTally) finish(lv *Level, s *scratch, windowS float64) {
	n := float64(lv.AchievedConcurrency)
	if c.count == 0 {
		return
	}
	lv.UserCancelled = cancelledOf(c.count, lv.Requests)
	c.censored(lv, len(s.ttft))
	ok := lv.Requests - lv.Errors - c.count
	switch {
	case ok == 0:
		lv.UserCancelled.MeanOutputTokens = Float(c.outputTokens / float64(c.count))
	case lv.MeanOutputTokens.OK():
		lv.UserCancelled.MeanOutputTokens = Float((float64(lv.MeanOutputTokens)*float64(ok) + c.outputTokens) / float64(ok+c.count))
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

// censored sets lv's count of user cancels before a first token and, when they are more than
// ttftCensoredMax of the TTFT population (timed, the requests with a TTFT, and they), marks
// its TTFT percentiles as lower bounds with a note.
func (c *cancelTally) censored(lv *Level, timed int) {
	b := c.count - c.answered
	lv.UserCancelled.BeforeFirstToken = b
	if n := timed + b; b > 0 && float64(b) > ttftCensoredMax*float64(n) {
		lv.UserCancelled.TTFTLowerBound = true
		lv.Notes = append(lv.Notes, fmt.Sprintf("TTFT percentiles are lower bounds: users cancelled %d of the %d requests of its TTFT population (%.1f%%) before a first token, the slowest ones, left out",
			b, n, 100*float64(b)/float64(n)))
	}
}
