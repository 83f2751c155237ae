package sweep

import (
	"fmt"

	"github.com/kneecap/kneecap/record"
)

// Resume is where a resumed sweep continues, worked out from the levels its results directory
// holds (PlanResume).
type Resume struct {
	// Planned and Added count the levels done of the plan and added after it (sweep.refine).
	Planned, Added int
	// StartIndex is Plan.StartIndex: the first planned level to run, len(levels) when no
	// planned level is left.
	StartIndex int
	// PlannedOver reports that no planned level is left to run: all ran, an added level ran
	// (so the planned part had ended), or the stop rules had ended them.
	PlannedOver bool
	// Stopped is the stop rules' reason when they had ended the planned levels, else "".
	Stopped string
}

// PlanResume works out where a sweep of the planned levels (concurrencies) run by proto — which
// adds up to proto.Refine levels and runs an excluded level again up to proto.RetryExcluded
// times (RetryWhy) — continues after done, the levels its directory holds. With levels still to
// add or retry, judge (nil: none) is asked over the planned levels done: it may have ended them
// before the interrupt, and the rest of the sweep is then the retries and added levels only
// (Run asks it again and keeps its reason). It is an error when nothing is left to run: no
// planned level, no added level and no retry.
func PlanResume(levels []int, done []record.Level, proto Protocol, judge Judge) (Resume, error) {
	return planResumeN(len(levels), done, proto, judge)
}

// planResumeN is PlanResume for a plan of n planned levels (a rate sweep's: len(Plan.Rates)).
func planResumeN(n int, done []record.Level, proto Protocol, judge Judge) (Resume, error) {
	refine := proto.Refine
	var r Resume
	retried := false
	for _, l := range done {
		switch {
		case l.Run.RetryOf != nil:
			retried = true // retries run once the planned levels are over
		case l.Run.Refine != "":
			r.Added++
		default:
			r.Planned++
		}
	}
	r.PlannedOver = r.Added > 0 || retried || r.Planned >= n
	if i, _ := nextRetry(done, proto); r.Added >= refine && r.PlannedOver && i < 0 {
		return r, fmt.Errorf("all %d levels are done (%d planned, %d added): nothing to resume", len(done), r.Planned, r.Added)
	}
	r.StartIndex = r.Planned
	if !r.PlannedOver && (refine > 0 || proto.RetryExcluded > 0) && judge != nil {
		if r.Stopped = judge.Decide(plannedLevels(done)); r.Stopped != "" {
			r.PlannedOver = true
		}
	}
	if r.PlannedOver {
		r.StartIndex = n
	}
	return r, nil
}
