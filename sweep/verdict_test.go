package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestVerdictRateNote: a window whose output rises 10 tokens a slice, 10 to 100 over ten
// 100 ms slices (i + 1 requests of 10 tokens each in slice i, all alike, so their own spread
// leaves the CI target at ci_target), fails the steady-state test on a concurrency level and
// on a rate level; the concurrency level's note gives the CI half-width its target, the rate
// level's only reports it (SteadyRate does not judge it) and names the trend's bound.
func TestVerdictRateNote(t *testing.T) {
	const w0, slice = int64(1e18), int64(100 * time.Millisecond)
	var recs []record.Record
	for i := range 10 {
		for j := range i + 1 {
			recs = append(recs, record.Record{Status: record.StatusOK, Sent: w0 + int64(i)*slice + slice/4 + int64(j)*int64(time.Millisecond),
				TTFT: time.Millisecond, E2E: time.Millisecond, OutputTokens: 10})
		}
	}
	proto := Protocol{Duration: time.Second, MaxDuration: time.Second, MinRequests: 1, CITarget: 0.05}
	for _, c := range []struct {
		name    string
		rps     float64
		want    string
		mustNot string
	}{
		{"concurrency", 0, "(target 5.0%), trend p = ", "not judged"},
		{"rate", 4, "needs > 0.05, or a change of at most 5.0% across the window); 95% CI half-width ", "target"},
	} {
		run := record.LevelRun{W0: w0, W1: w0 + 10*slice, OfferedRPS: c.rps}
		notes := finishWindow(&run, recs, proto, slice, endNormal)
		var note string
		for _, n := range notes {
			if strings.HasPrefix(n, "not steady after 1s: ") {
				note = n
			}
		}
		if run.Steady || note == "" || !strings.Contains(note, c.want) || strings.Contains(note, c.mustNot) {
			t.Errorf("%s: steady %v, notes %q: want a note with %q, without %q", c.name, run.Steady, notes, c.want, c.mustNot)
		}
	}
}
