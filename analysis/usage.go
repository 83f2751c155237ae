package analysis

import (
	"fmt"

	"github.com/kneecap/kneecap/record"
)

// usageCounts are a level's sums over the records the client marked: time to first answer
// token, reasoning tokens, usage not believed and retried requests (DESIGN §1, §7).
type usageCounts struct {
	ttfa        []float64 // ms, of the successful requests whose answer time is known
	reasoned    bool      // some request reasoned before it answered
	reasonSum   float64
	reasonN     int
	disbelieved int
	firstNote   string
	retried     int
	requests    int
}

// add counts r, a request sent in the window.
func (u *usageCounts) add(r *record.Record) {
	u.requests++
	if r.TokensNote != "" {
		u.disbelieved++
		if u.firstNote == "" {
			u.firstNote = r.TokensNote
		}
	}
	if r.Retried {
		u.retried++
	}
	if !r.OK() {
		return
	}
	if r.ReasoningTokens > 0 {
		u.reasonSum += float64(r.ReasoningTokens)
		u.reasonN++
	}
	switch {
	case r.TTFA > 0:
		u.ttfa = append(u.ttfa, float64(r.TTFA)/1e6)
		u.reasoned = true
	case r.ReasoningChunks == 0 && r.TTFT > 0:
		u.ttfa = append(u.ttfa, float64(r.TTFT)/1e6) // answered first: TTFA is TTFT
	}
	// Reasoning chunks and no TTFA: no answer came (or it came with the first reasoning
	// chunk, then more reasoning): no answer time.
}

// summarizeUsage sets lv's TTFA, MeanReasoningTokens, UsageDisbelieved and Retried from the
// records of the latency population (in), and notes the requests whose usage was not believed or that were
// retried. TTFA covers the successful requests whose answer time is known (their TTFT when no
// reasoning came first) and stays null unless one of them reasoned first; the mean reasoning
// tokens are over the successful requests whose usage reports them.
func summarizeUsage(lv *Level, records []record.Record, in func(*record.Record) bool) {
	var u usageCounts
	for i := range records {
		if r := &records[i]; in(r) {
			u.add(r)
		}
	}
	if u.reasoned {
		lv.TTFA = LatencyOf(u.ttfa)
	}
	if u.reasonN > 0 {
		lv.MeanReasoningTokens = Float(u.reasonSum / float64(u.reasonN))
	}
	lv.UsageDisbelieved, lv.Retried = u.disbelieved, u.retried
	if u.disbelieved > 0 {
		lv.Notes = append(lv.Notes, fmt.Sprintf("usage not believed for %d of %d requests sent in the window (first: %s)", u.disbelieved, u.requests, u.firstNote))
	}
	if u.retried > 0 {
		lv.Notes = append(lv.Notes, fmt.Sprintf("%d of %d requests sent in the window were retried once on a fresh connection: the server had closed the pooled keep-alive connection before answering (not an error)", u.retried, u.requests))
	}
}
