package sweep

import (
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestHealthSilence: a first request that timed out before any content counts toward the
// silence stop, and so does an overlong one toward the overlong stop; a first request that
// streamed content and then timed out (a stall, the stream's time bound) counts toward
// neither: the server answered, slowly.
func TestHealthSilence(t *testing.T) {
	t.Parallel()
	fail := func(class record.ErrorClass, ttft int64) *record.Record {
		return &record.Record{Status: record.StatusError, ErrorClass: class, Error: "openai: stream: " + string(class), TTFT: time.Duration(ttft)}
	}
	var h health
	h.ended(fail(record.ErrTimeout, 0), true)
	h.ended(fail(record.ErrTimeout, 5e6), true)
	h.ended(fail(record.ErrOverlong, 5e6), true)
	h.ended(fail(record.ErrTimeout, 0), false)
	if got := h.firstTimeouts.Load(); got != 1 {
		t.Errorf("%d first timeouts, want 1 (the one with no content)", got)
	}
	if got := h.firstOverlongs.Load(); got != 1 {
		t.Errorf("%d first overlongs, want 1", got)
	}
	if got := *h.firstTimeout.Load(); got != "openai: stream: timeout" {
		t.Errorf("first timeout's message %q", got)
	}
}
