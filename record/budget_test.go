package record

import (
	"testing"
	"time"
)

// TestAnswerBudgetHeard: an answer before the first level starts the budget's clock again, so
// Probes and Deadline count from it; an answer heard earlier than the latest moves nothing.
func TestAnswerBudgetHeard(t *testing.T) {
	t.Parallel()
	start := time.Now()
	b := NewAnswerBudget(start, 10*time.Second)
	if b.Probes() != start.Add(5*time.Second) || b.Deadline() != start.Add(9*time.Second) {
		t.Fatalf("probes %v deadline %v, want 5s and 9s from the start", b.Probes().Sub(start), b.Deadline().Sub(start))
	}
	if !b.Unheard() {
		t.Error("a new budget has heard an answer")
	}
	b.Heard(start.Add(20 * time.Second))
	b.Heard(start.Add(time.Second))
	if got := b.Deadline().Sub(start); got != 29*time.Second {
		t.Errorf("deadline %v from the start, want 29s (9s after the answer at 20s)", got)
	}
	if b.Spent(start.Add(28*time.Second)) || !b.Spent(start.Add(29*time.Second)) {
		t.Error("the budget is spent before its deadline after the answer, or not at it")
	}
	if b.Unheard() {
		t.Error("a budget that heard an answer is unheard")
	}
}

// TestAnswers: a success and any failure by what the server sent (an HTTP error, a redirect,
// a bad chunk, a broken stream) answer the budget; a timeout, a connect error, a cancel and
// the client's own failure do not.
func TestAnswers(t *testing.T) {
	t.Parallel()
	for class, want := range map[ErrorClass]bool{ErrHTTP5xx: true, ErrHTTP429: true, ErrHTTP4xx: true, ErrEmpty: true,
		ErrBadChunk: true, ErrRedirect: true, ErrOverlong: true, ErrStreamBroken: true, ErrUserCancel: false,
		ErrTimeout: false, ErrConnect: false, ErrCancelled: false, ErrClient: false, "": false} {
		if got := Answers(&Record{Status: StatusError, ErrorClass: class}); got != want {
			t.Errorf("%s answers: %v, want %v", class, got, want)
		}
	}
	if !Answers(&Record{Status: StatusOK}) {
		t.Error("a success does not answer")
	}
	if !Answers(&Record{Status: StatusCancelled, ErrorClass: ErrUserCancel, TTFT: time.Millisecond}) {
		t.Error("a user cancel after its first token does not answer")
	}
}
