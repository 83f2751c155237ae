package sweep

import (
	"strings"
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

// TestBudgetSpentMessage: the budget's stop says what waited — the preflight too when the
// server never answered, this level alone after an answer before it — and what to do about a
// server that is only slow.
func TestBudgetSpentMessage(t *testing.T) {
	t.Parallel()
	b := record.NewAnswerBudget(time.Now().Add(-time.Minute), 10*time.Second)
	const raise = "if the server is only slow to its first token, raise target.answer_budget (0 = off)"
	if got := budgetSpent(b); !strings.Contains(got, "the preflight, the prompt sizing and this level waited 1m0") || !strings.HasSuffix(got, raise) {
		t.Errorf("never answered: %q", got)
	}
	b.Heard(time.Now().Add(-30 * time.Second))
	if got := budgetSpent(b); !strings.Contains(got, "this level (after the server's last answer, to the preflight or the prompt sizing) waited 30") || !strings.HasSuffix(got, raise) {
		t.Errorf("answered before: %q", got)
	}
}
