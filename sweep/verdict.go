package sweep

import (
	"fmt"
	"math"
	"time"

	"github.com/kneecap/kneecap/record"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

// The verdict of a level's final window (DESIGN §3.3, §3.9): the slices, the steady-state
// test, min_requests and the notes, from every record of the level after the drain.

// finishWindow computes the final slice TPS and steady verdict of the window [W0, W1) from
// every record of the level, and returns notes. For a window decided steady by the
// controller this reproduces the controller's numbers exactly: the same slices, and every
// record with a token in the window was complete when it decided.
func finishWindow(run *record.LevelRun, records []record.Record, proto Protocol, slice int64, end levelEnd) []string {
	win := run.W1 - run.W0
	run.TTFTTrend, run.TTFTTrendP, run.LatencyRising = 0, 1, false
	notes := endNotes(run, win, end)
	if win <= 0 {
		return append(notes, "no measurement window: the level ended during warmup")
	}
	n := max(record.MinSlices, int(math.Round(float64(win)/float64(slice))))
	run.Slices = n
	run.SliceTPS = record.SliceTPS(records, run.W0, run.W1, n)
	var done record.CompletionStats
	for i := range records {
		if r := &records[i]; record.CompletedInWindow(r, run.W0, run.W1) {
			done.Add(r.Yield(), r.E2E)
		}
	}
	rate := run.Mode().IsRate()
	run.CITarget = proto.CITarget
	if !rate {
		run.CITarget = record.CITarget(proto.CITarget, n, done)
	}
	d := record.SteadyDetails(run.SliceTPS)
	ok := d.SteadyAt(proto.CITarget, run.CITarget, rate)
	run.CIHalfWidth, run.TrendP = d.CIHalfWidth, d.TrendP
	if !d.Defined() {
		run.CIHalfWidth, run.TrendP = 0, 0
		notes = append(notes, "steady-state test undefined: no output tokens in the window")
	}
	if run.TimeScale > 0 && d.Defined() {
		// A trace level's slices follow the trace's own shape (a ramp, its bursts): no trend
		// test; the analysis judges it by its backlog, completions against arrivals (§3.9).
		ok = true
	}
	if latencyTrend(run, records); run.LatencyRising {
		notes = append(notes, fmt.Sprintf("latency still rising: %s %+.0f%% across the window (trend p = %.3g)", waitedName(records), 100*run.TTFTTrend, run.TTFTTrendP))
	}
	short := win < slice*record.MinSlices
	few := done.N < proto.MinRequests
	if few {
		notes = append(notes, fmt.Sprintf("only %d successful completions in the window (min_requests %d)", done.N, proto.MinRequests))
	}
	if short && end == endNormal {
		notes = append(notes, "window shorter than duration")
	}
	run.Steady = ok && !short && !few && !run.Interrupted && !end.dead()
	run.Imprecise = !run.Steady && end == endNormal && !run.Interrupted && !short && !rate &&
		d.Defined() && !d.Trending(proto.CITarget) && done.N >= minImpreciseCompletions
	run.NotSteadyReason = notSteadyReason(run, end, ok, few, short, done.N, proto)
	return append(notes, precisionNotes(run, win, ok, done, proto)...)
}

// endNotes are the notes of a window ended other than normally (win ns long), and marks an
// interrupted one.
func endNotes(run *record.LevelRun, win int64, end levelEnd) []string {
	d := time.Duration(win).Round(time.Millisecond)
	switch end {
	case endInterrupt, endCancel:
		run.Interrupted = true
		return []string{fmt.Sprintf("interrupted after %s of measurement", d)}
	case endBudget:
		return []string{fmt.Sprintf("cut by the time budget after %s of measurement", d)}
	case endUnreachable, endSilent:
		return []string{fmt.Sprintf("ended after %s of measurement: the server did not answer", d)}
	case endOverlong:
		return []string{fmt.Sprintf("ended after %s of measurement: the server ignores max_tokens", d)}
	}
	return nil
}

// The reasons a level that the server's death ended is not steady (notSteadyReason). A
// shard's part keeps them: the merge tells by them that the part ended early (endedApart).
const (
	reasonSilent   = "the server did not answer"
	reasonOverlong = "the server ignores max_tokens"
)

// deadReason reports whether reason is one of a level that the server's death ended.
func deadReason(reason string) bool { return reason == reasonSilent || reason == reasonOverlong }

// notSteadyReason says why run is not steady ("" when it is): interrupted, the server silent,
// the steady-state test failed (ok false), fewer than min_requests completions (few, okDone
// of them) or a window shorter than duration (short).
func notSteadyReason(run *record.LevelRun, end levelEnd, ok, few, short bool, okDone int, proto Protocol) string {
	switch {
	case run.Steady:
		return ""
	case run.Interrupted:
		return "interrupted"
	case end == endOverlong:
		return reasonOverlong
	case end.dead():
		return reasonSilent
	case !ok && run.Mode().IsRate():
		return fmt.Sprintf("the steady-state test failed (no material trend; a change of at most %.1f%% across the window)", 100*proto.CITarget)
	case !ok:
		return fmt.Sprintf("the steady-state test failed (target CI half-width %.1f%%, no material trend)", 100*run.CITarget)
	case few:
		return fmt.Sprintf("only %d successful completions in the window, below min_requests %d", okDone, proto.MinRequests)
	case short:
		return "the window is shorter than duration"
	}
	return ""
}

// precisionNotes are the notes on the precision of run's window (win ns): the failed test's
// statistics (ok false), an imprecise level kept, a CI target widened for its requests (done).
func precisionNotes(run *record.LevelRun, win int64, ok bool, done record.CompletionStats, proto Protocol) []string {
	var notes []string
	rate := run.Mode().IsRate()
	if ci := run.CIHalfWidth; !ok && ci > 0 {
		target := run.CITarget
		if rate {
			target = proto.CITarget // the drift's bound: a rate level's interval is not judged
		}
		notes = append(notes, notSteadyNote(win, ci, run.TrendP, target, rate))
	}
	if run.Imprecise {
		notes = append(notes, fmt.Sprintf("imprecise, not drifting: no material trend by max_duration; its numbers stand with the CI they reached (TPS ±%.1f%%, %d completions)",
			100*run.CIHalfWidth, done.N))
	}
	if run.CITarget > proto.CITarget && !rate {
		notes = append(notes, fmt.Sprintf("CI target %.1f%%, not ci_target %.1f%%: the %d requests of the window vary too much in speed to resolve it (±%.1f%% from their own spread)",
			100*run.CITarget, 100*proto.CITarget, done.N, 100*done.ResolvableCI()))
	}
	return notes
}

// minImpreciseCompletions is the least number of successful completions a level not steady
// only for precision must have to keep its numbers (LevelRun.Imprecise): fewer give no
// percentile worth a flag.
const minImpreciseCompletions = 3

// latencyRiseMin is the least rise of TTFT across a window, relative to its mean, that counts
// as latency still rising (LevelRun.LatencyRising) when the trend is significant: a queue
// still growing, evidence of overload.
const latencyRiseMin = 0.10

// latencyTrend sets run's TTFT trend from the successful requests sent in its window: the OLS
// slope of their TTFT (an embeddings request's E2E, Record.Waited) on their send time, as a change across the window relative to the mean,
// its p-value, and whether it rose materially (LatencyRising).
func latencyTrend(run *record.LevelRun, records []record.Record) {
	var x, y []float64
	for i := range records {
		r := &records[i]
		if w := r.Waited(); r.OK() && w > 0 && record.SentInWindow(r, run.W0, run.W1) {
			x = append(x, float64(r.Sent-run.W0)/1e9)
			y = append(y, float64(w)/1e6)
		}
	}
	if len(x) < 3 || floats.Max(x) == floats.Min(x) {
		return
	}
	mean := stat.Mean(y, nil)
	if !(mean > 0) {
		return
	}
	p, beta := record.LinearTrend(x, y)
	run.TTFTTrend = beta * float64(run.W1-run.W0) / 1e9 / mean
	run.TTFTTrendP = p
	run.LatencyRising = p <= record.TrendAlpha && run.TTFTTrend > latencyRiseMin
}

// notSteadyNote is the note of a window of length win (ns) the steady-state test failed, with
// its relative CI half-width ci and trend p-value p: a rate level's test judges the trend only
// (SteadyRate), so its note does not give the interval a target.
func notSteadyNote(win int64, ci, p, ciTarget float64, rate bool) string {
	d := time.Duration(win).Round(time.Millisecond)
	if rate {
		return fmt.Sprintf("not steady after %s: trend p = %.3f (needs > %.2f, or a change of at most %.1f%% across the window); 95%% CI half-width %.1f%% of mean TPS (not judged on a rate level)",
			d, p, record.TrendAlpha, 100*ciTarget, 100*ci)
	}
	return fmt.Sprintf("not steady after %s: 95%% CI half-width %.1f%% of mean TPS (target %.1f%%), trend p = %.3f (needs > %.2f)",
		d, 100*ci, 100*ciTarget, p, record.TrendAlpha)
}

// waitedName names the latency latencyTrend watches (record.Record.Waited): "TTFT", or
// "latency" for embeddings requests, whose answers arrive whole.
func waitedName(records []record.Record) string {
	if len(records) > 0 && records[0].Inputs > 0 {
		return "latency"
	}
	return "TTFT"
}
