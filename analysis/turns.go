package analysis

import (
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/record"
)

// TurnRows bounds the turn indices summarised one by one: turns from TurnRows on are pooled
// in one last TurnStats (AndLater), so a conversation of many turns keeps the table short.
const TurnRows = 10

// TurnStats summarises one turn index of a level's multi-turn sessions (workload.sessions,
// DESIGN §4.12): the requests of that turn sent in the window, the successful ones' prompt
// length (the history: usage.prompt_tokens, else the length requested) and TTFT.
type TurnStats struct {
	// Turn is the turn index, from 1; with AndLater, the first of the turns pooled.
	Turn int `json:"turn"`
	// AndLater reports that the row pools every turn from Turn on (Turn = TurnRows).
	AndLater bool `json:"and_later,omitempty"`
	// Requests counts the turn's successful requests sent in the window.
	Requests int `json:"requests"`
	// Errors counts the turn's failed requests sent in the window (not the cancelled ones):
	// each ended its conversation.
	Errors int `json:"errors"`
	// PromptTokensP50 is the median prompt length in tokens, the history included.
	PromptTokensP50 Float `json:"prompt_tokens_p50"`
	// TTFTP50 and TTFTP95 are the type-7 percentiles of TTFT, in milliseconds.
	TTFTP50 Float `json:"ttft_p50_ms"`
	TTFTP95 Float `json:"ttft_p95_ms"`
}

// turns summarises the session turns of records by turn index, over the requests of the
// latency population (in): one TurnStats for every turn index below TurnRows that has a successful or failed
// request, in order, then one for all later turns; nil when no record is a session's
// (Record.Turn 0). The percentiles of a row without a successful request are NaN.
func turns(records []record.Record, in func(*record.Record) bool) []TurnStats {
	type acc struct {
		prompt, ttft []float64
		errors       int
	}
	var by []acc
	for i := range records {
		r := &records[i]
		if r.Turn <= 0 || r.Status == record.StatusCancelled || !in(r) {
			continue
		}
		k := min(r.Turn, TurnRows)
		for len(by) < k {
			by = append(by, acc{})
		}
		a := &by[k-1]
		if !r.OK() {
			a.errors++
			continue
		}
		a.prompt = append(a.prompt, float64(r.PromptTokens))
		a.ttft = append(a.ttft, float64(r.TTFT)/1e6)
	}
	var out []TurnStats
	for i := range by {
		a := &by[i]
		if len(a.ttft) == 0 && a.errors == 0 {
			continue
		}
		s := TurnStats{Turn: i + 1, AndLater: i+1 == TurnRows, Requests: len(a.ttft), Errors: a.errors,
			PromptTokensP50: NaN(), TTFTP50: NaN(), TTFTP95: NaN()}
		if len(a.ttft) > 0 {
			slices.Sort(a.prompt)
			slices.Sort(a.ttft)
			s.PromptTokensP50 = Float(Percentile(a.prompt, 50))
			s.TTFTP50, s.TTFTP95 = Float(Percentile(a.ttft, 50)), Float(Percentile(a.ttft, 95))
		}
		out = append(out, s)
	}
	return out
}

// Label is the row's turn as a table shows it: "3", or "10+" for the pooled later turns.
func (s TurnStats) Label() string {
	if s.AndLater {
		return strconv.Itoa(s.Turn) + "+"
	}
	return strconv.Itoa(s.Turn)
}
