package record

import (
	"testing"
	"time"
)

// TestFailuresCountNoTokens: of records that each received the same chunks inside the window,
// the successful and the cancelled ones (at the drain, by their user) count their tokens, and
// a failure of any class none (DESIGN §1).
func TestFailuresCountNoTokens(t *testing.T) {
	t.Parallel()
	const w0, w1 = int64(0), int64(time.Second)
	chunks := []int64{100_000, 200_000, 300_000, 400_000} // µs from Sent: all inside the window
	for _, tc := range []struct {
		status Status
		class  ErrorClass
		want   float64
	}{
		{StatusOK, "", 8},
		{StatusCancelled, ErrCancelled, 8},
		{StatusCancelled, ErrUserCancel, 8},
		{StatusError, ErrTimeout, 0},
		{StatusError, ErrStreamBroken, 0},
		{StatusError, ErrHTTP5xx, 0},
		{StatusError, ErrBadChunk, 0},
		{StatusError, "overlong", 0},
		{StatusCancelled, "overlong", 0}, // a class not listed is a failure, whatever its status
	} {
		rec := Record{Sent: w0, Status: tc.status, ErrorClass: tc.class, Chunks: chunks, OutputTokens: 8,
			TTFT: 100 * time.Millisecond, E2E: 400 * time.Millisecond}
		if got := TokensInWindow(&rec, w0, w1, make([]float64, 4)); got != tc.want {
			t.Errorf("%s/%s with chunks: %g tokens in the window, want %g", tc.status, tc.class, got, tc.want)
		}
		rec.Chunks = nil // spread from TTFT to E2E
		if got := TokensInWindow(&rec, w0, w1, make([]float64, 4)); got != tc.want {
			t.Errorf("%s/%s without chunks: %g tokens in the window, want %g", tc.status, tc.class, got, tc.want)
		}
	}
}

// TestAllFailedNoThroughput: a level whose every request failed after streaming has an output
// TPS of 0 (before: the tokens of its broken streams, 2,271,241 tok/s against a hostile server).
func TestAllFailedNoThroughput(t *testing.T) {
	t.Parallel()
	const w0, w1 = int64(0), int64(time.Second)
	var recs []Record
	for i := range 10 {
		recs = append(recs, Record{Sent: int64(i) * 1e6, Status: StatusError, ErrorClass: ErrStreamBroken,
			Chunks: []int64{1000, 2000}, OutputTokens: 1 << 20, TTFT: time.Millisecond, E2E: 2 * time.Millisecond})
	}
	if got := LevelOutputTPS(recs, w0, w1); got != 0 {
		t.Errorf("output TPS of a level of failures: %g, want 0", got)
	}
	if got := SliceTPS(recs, w0, w1, 10); got[0] != 0 {
		t.Errorf("slice TPS of a level of failures: %v, want 0s", got)
	}
}
