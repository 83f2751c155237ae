package analysis

import (
	"slices"

	"github.com/kneecap/kneecap/sweep"
)

// TurnStats summarises one turn index of a level's multi-turn sessions (workload.sessions,
// DESIGN §4.12): the successful requests of that turn sent in the window, their prompt
// length (the history: usage.prompt_tokens, else the length requested) and TTFT.
type TurnStats struct {
	// Turn is the turn index, from 1.
	Turn int `json:"turn"`
	// Requests counts the turn's successful requests sent in the window.
	Requests int `json:"requests"`
	// PromptTokensP50 is the median prompt length in tokens, the history included.
	PromptTokensP50 Float `json:"prompt_tokens_p50"`
	// TTFTP50 and TTFTP95 are the type-7 percentiles of TTFT, in milliseconds.
	TTFTP50 Float `json:"ttft_p50_ms"`
	TTFTP95 Float `json:"ttft_p95_ms"`
}

// Turns summarises the session turns of records by turn index, over the successful
// requests sent in [w0, w1): one TurnStats for every turn index that has one, in order; nil
// when no record is a session's (Record.Turn 0).
func Turns(records []sweep.Record, w0, w1 int64) []TurnStats {
	type acc struct{ prompt, ttft []float64 }
	var by []acc
	for i := range records {
		r := &records[i]
		if r.Turn <= 0 || !r.OK() || !sweep.SentInWindow(r, w0, w1) {
			continue
		}
		for len(by) < r.Turn {
			by = append(by, acc{})
		}
		a := &by[r.Turn-1]
		a.prompt = append(a.prompt, float64(r.PromptTokens))
		a.ttft = append(a.ttft, float64(r.TTFT)/1e6)
	}
	var out []TurnStats
	for i := range by {
		a := &by[i]
		if len(a.ttft) == 0 {
			continue
		}
		slices.Sort(a.prompt)
		slices.Sort(a.ttft)
		out = append(out, TurnStats{
			Turn:            i + 1,
			Requests:        len(a.ttft),
			PromptTokensP50: Float(Percentile(a.prompt, 50)),
			TTFTP50:         Float(Percentile(a.ttft, 50)),
			TTFTP95:         Float(Percentile(a.ttft, 95)),
		})
	}
	return out
}
