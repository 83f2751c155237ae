package sweep

import (
	"fmt"
	"math"
	"time"
)

// The verdict of a level's final window (DESIGN §3.3, §3.9): the slices, the steady-state
// test, min_requests and the notes, from every record of the level after the drain.

// finishWindow computes the final slice TPS and steady verdict of the window [W0, W1) from
// every record of the level, and returns notes. For a window decided steady by the
// controller this reproduces the controller's numbers exactly: the same slices, and every
// record with a token in the window was complete when it decided.
func finishWindow(run *LevelRun, records []Record, proto Protocol, slice int64, end levelEnd) []string {
	var notes []string
	win := run.W1 - run.W0
	switch end {
	case endInterrupt, endCancel:
		run.Interrupted = true
		notes = append(notes, fmt.Sprintf("interrupted after %s of measurement", time.Duration(win).Round(time.Millisecond)))
	case endBudget:
		notes = append(notes, fmt.Sprintf("cut by the time budget after %s of measurement", time.Duration(win).Round(time.Millisecond)))
	case endUnreachable, endSilent:
		notes = append(notes, fmt.Sprintf("ended after %s of measurement: the server did not answer", time.Duration(win).Round(time.Millisecond)))
	}
	if win <= 0 {
		notes = append(notes, "no measurement window: the level ended during warmup")
		return notes
	}
	n := max(MinSlices, int(math.Round(float64(win)/float64(slice))))
	run.Slices = n
	run.SliceTPS = SliceTPS(records, run.W0, run.W1, n)
	test := SteadyState
	if run.OfferedRPS > 0 {
		test = SteadyRate
	}
	ci, p, ok := test(run.SliceTPS, proto.CITarget)
	if math.IsNaN(ci) || math.IsNaN(p) {
		ci, p = 0, 0
		notes = append(notes, "steady-state test undefined: no output tokens in the window")
	}
	run.CIHalfWidth, run.TrendP = ci, p
	if run.TimeScale > 0 && !math.IsNaN(ci) {
		// A trace level's slices follow the trace's own shape (a ramp, its bursts): no trend
		// test; the analysis judges it by its backlog, completions against arrivals (§3.9).
		ok = true
	}
	okDone := completions(records, run.W0, run.W1)
	short := win < slice*MinSlices
	few := okDone < proto.MinRequests
	if few {
		notes = append(notes, fmt.Sprintf("only %d successful completions in the window (min_requests %d)", okDone, proto.MinRequests))
	}
	if short && end == endNormal {
		notes = append(notes, "window shorter than duration")
	}
	run.Steady = ok && !short && !few && !run.Interrupted && !end.dead()
	switch {
	case run.Steady:
	case run.Interrupted:
		run.NotSteadyReason = "interrupted"
	case end.dead():
		run.NotSteadyReason = "the server did not answer"
	case !ok && run.OfferedRPS > 0:
		run.NotSteadyReason = fmt.Sprintf("the steady-state test failed (no material trend; a change of at most %.1f%% across the window)", 100*proto.CITarget)
	case !ok:
		run.NotSteadyReason = fmt.Sprintf("the steady-state test failed (target CI half-width %.1f%%, no material trend)", 100*proto.CITarget)
	case few:
		run.NotSteadyReason = fmt.Sprintf("only %d successful completions in the window, below min_requests %d", okDone, proto.MinRequests)
	case short:
		run.NotSteadyReason = "the window is shorter than duration"
	}
	if !ok && ci > 0 {
		notes = append(notes, notSteadyNote(win, ci, p, proto.CITarget, run.OfferedRPS > 0))
	}
	return notes
}

// notSteadyNote is the note of a window of length win (ns) the steady-state test failed, with
// its relative CI half-width ci and trend p-value p: a rate level's test judges the trend only
// (SteadyRate), so its note does not give the interval a target.
func notSteadyNote(win int64, ci, p, ciTarget float64, rate bool) string {
	d := time.Duration(win).Round(time.Millisecond)
	if rate {
		return fmt.Sprintf("not steady after %s: trend p = %.3f (needs > %.2f, or a change of at most %.1f%% across the window); 95%% CI half-width %.1f%% of mean TPS (not judged on a rate level)",
			d, p, TrendAlpha, 100*ciTarget, 100*ci)
	}
	return fmt.Sprintf("not steady after %s: 95%% CI half-width %.1f%% of mean TPS (target %.1f%%), trend p = %.3f (needs > %.2f)",
		d, 100*ci, 100*ciTarget, p, TrendAlpha)
}
