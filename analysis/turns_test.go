package analysis

import (
	"reflect"
	"testing"
	"time"

	"github.com/kneecap/kneecap/sweep"
)

// TestTurns: requests group by turn, only the successful ones sent inside the window count,
// and the percentiles are type 7 (R's quantile default: of 10, 20, 30, 40 ms the median is
// 25 and the 95th percentile 10 + 0.95 × 3 × 10 = 38.5); records without a turn give nil.
func TestTurns(t *testing.T) {
	const w0, w1 = 1000, 2000
	rec := func(turn int, sent int64, ttftMS int, prompt int, st sweep.Status) sweep.Record {
		return sweep.Record{Turn: turn, Sent: sent, TTFT: time.Duration(ttftMS) * time.Millisecond, PromptTokens: prompt, Status: st}
	}
	recs := []sweep.Record{
		rec(1, 1100, 10, 100, sweep.StatusOK), rec(1, 1200, 20, 100, sweep.StatusOK),
		rec(1, 1300, 30, 100, sweep.StatusOK), rec(1, 1400, 40, 100, sweep.StatusOK),
		rec(3, 1500, 90, 300, sweep.StatusOK),
		rec(3, 1600, 500, 300, sweep.StatusError), // failed: not counted
		rec(2, 900, 70, 200, sweep.StatusOK),      // sent before the window
		rec(0, 1500, 5, 10, sweep.StatusOK),       // not a session
	}
	want := []TurnStats{
		{Turn: 1, Requests: 4, PromptTokensP50: 100, TTFTP50: 25, TTFTP95: 38.5},
		{Turn: 3, Requests: 1, PromptTokensP50: 300, TTFTP50: 90, TTFTP95: 90},
	}
	if got := Turns(recs, w0, w1); !reflect.DeepEqual(got, want) {
		t.Errorf("Turns = %+v, want %+v", got, want)
	}
	if got := Turns(recs[7:], w0, w1); got != nil {
		t.Errorf("no sessions: %+v", got)
	}
}
