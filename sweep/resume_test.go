package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// stopJudge stops on every call.
type stopJudge struct{ calls int }

func (j *stopJudge) Decide([]record.Level) string { j.calls++; return "plateau: test judge" }

// excludedLevel is a finished level at index i, concurrency c, not steady for its trend (a
// retry candidate) when excluded.
func excludedLevel(i, c int, excluded bool) record.Level {
	run := record.LevelRun{Index: i, Concurrency: c, W0: 1, W1: 1 + int64(time.Second), Steady: !excluded}
	if excluded {
		run.NotSteadyReason = "the steady-state test failed (target CI half-width 5.0%, no material trend)"
	}
	return record.Level{Run: run}
}

// TestPlanResumeRetries (issue 22's review): a run whose planned levels are done and one of
// them excluded resumes to retry it when retries are on, and has nothing left without them; a
// retry done counts as neither planned nor added and ends the planned part; with retries on
// and refine 0, the Judge is asked whether it had ended the planned levels (so a resume does
// not run levels past a stop rule to reach a pending retry).
func TestPlanResumeRetries(t *testing.T) {
	done := []record.Level{excludedLevel(0, 1, false), excludedLevel(1, 2, true)}
	proto := Protocol{RetryExcluded: 1, Stop: record.StopRules{MaxErrorRate: 0.05}}
	r, err := PlanResume([]int{1, 2}, done, proto, nil)
	if err != nil || !r.PlannedOver || r.Planned != 2 {
		t.Errorf("planned done, one excluded, retries 1: %+v, %v; want the retry to run", r, err)
	}
	proto.RetryExcluded = 0
	if _, err := PlanResume([]int{1, 2}, done, proto, nil); err == nil || !strings.Contains(err.Error(), "nothing to resume") {
		t.Errorf("retries 0: %v, want nothing to resume", err)
	}
	index := 1
	again := excludedLevel(2, 2, true)
	again.Run.RetryOf = &index
	proto.RetryExcluded = 1
	if r, err := PlanResume([]int{1, 2, 4}, append(done, again), proto, nil); err == nil {
		t.Errorf("the retry done (and itself excluded, at its last try): %+v, want nothing to resume", r)
	}
	j := &stopJudge{}
	r, err = PlanResume([]int{1, 2, 4, 8}, done, proto, j)
	if err != nil || !r.PlannedOver || r.Stopped != "plateau: test judge" || j.calls != 1 {
		t.Errorf("judge stopped the planned levels: %+v, %v (calls %d); want them over, the retry left", r, err, j.calls)
	}
}
