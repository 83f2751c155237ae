package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestTurns: requests group by turn, turns from 10 on pooled in one row; the successful ones
// sent inside the window give the percentiles, the failed ones the errors (cancelled ones
// neither); the percentiles are type 7 (R's quantile default: of 10, 20, 30, 40 ms the median
// is 25 and the 95th percentile 10 + 0.95 × 3 × 10 = 38.5; of 30 and 50, 40 and 49); records
// without a turn give nil.
func TestTurns(t *testing.T) {
	const w0, w1 = 1000, 2000
	rec := func(turn int, sent int64, ttftMS int, prompt int, st record.Status) record.Record {
		return record.Record{Turn: turn, Sent: sent, TTFT: time.Duration(ttftMS) * time.Millisecond, PromptTokens: prompt, Status: st}
	}
	recs := []record.Record{
		rec(1, 1100, 10, 100, record.StatusOK), rec(1, 1200, 20, 100, record.StatusOK),
		rec(1, 1300, 30, 100, record.StatusOK), rec(1, 1400, 40, 100, record.StatusOK),
		rec(3, 1500, 90, 300, record.StatusOK),
		rec(3, 1600, 500, 300, record.StatusError),                                       // failed: an error
		rec(2, 900, 70, 200, record.StatusOK),                                            // sent before the window
		rec(0, 1500, 5, 10, record.StatusOK),                                             // not a session
		rec(4, 1600, 0, 0, record.StatusError),                                           // a turn of errors only
		rec(4, 1700, 0, 0, record.StatusCancelled),                                       // cancelled: not counted
		rec(12, 1100, 50, 900, record.StatusOK), rec(10, 1200, 30, 800, record.StatusOK), // pooled: 10+
		rec(31, 1300, 20, 700, record.StatusError),
	}
	want := []TurnStats{
		{Turn: 1, Requests: 4, PromptTokensP50: 100, TTFTP50: 25, TTFTP95: 38.5},
		{Turn: 3, Requests: 1, Errors: 1, PromptTokensP50: 300, TTFTP50: 90, TTFTP95: 90},
		{Turn: 4, Errors: 1, PromptTokensP50: NaN(), TTFTP50: NaN(), TTFTP95: NaN()},
		{Turn: 10, AndLater: true, Requests: 2, Errors: 1, PromptTokensP50: 850, TTFTP50: 40, TTFTP95: 49},
	}
	got := turns(recs, sentIn(w0, w1))
	if fmt.Sprint(got) != fmt.Sprint(want) { // NaN ≠ NaN: compared as printed
		t.Errorf("Turns = %+v, want %+v", got, want)
	}
	if l := got[3].Label(); l != "10+" || got[0].Label() != "1" {
		t.Errorf("labels %q %q", got[0].Label(), l)
	}
	if got := turns(recs[7:8], sentIn(w0, w1)); got != nil {
		t.Errorf("no sessions: %+v", got)
	}
}
