package analysis

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// validity sets lv.Valid from its run and appends a note for each reason the level is invalid
// (DESIGN §3.2, §4.15): an empty window, no success among its latency population (anyOK
// false), an error rate above opts.MaxErrorRate, an interrupted or client-bound level, not
// steady (a closed-loop level kept as imprecise excepted), a Little's-law error above
// MaxLittlesLawError and, on a closed loop, an achieved concurrency under its target
// (underAchieved). An arrival-rate level (lv.IsRate) has no target concurrency, and is judged
// steady and by Little's law only while sustainable: a growing backlog is the finding of an
// unsustainable level, and a trace level's trend is the trace's own shape.
func validity(lv *Level, run *record.LevelRun, opts Options, anyOK bool) {
	rate := lv.IsRate()
	valid := lv.WindowS.OK()
	note := func(format string, args ...any) {
		valid = false
		lv.Notes = append(lv.Notes, "invalid: "+fmt.Sprintf(format, args...))
	}
	switch {
	case !lv.WindowS.OK() || anyOK:
	case rate:
		note("no request scheduled in the window succeeded")
	default:
		note("no successful request was sent in the window")
	}
	if !rate {
		if why := underAchieved(lv, opts.Think); why != "" {
			note("%s", why)
		}
	}
	if e := lv.ErrorRate; e.OK() && float64(e) > opts.MaxErrorRate {
		note("error rate %.1f%% > %.1f%%", float64(e)*100, opts.MaxErrorRate*100)
	}
	// A trace level is judged by its backlog, not by the steady-state test, whose trend is
	// the trace's own shape (DESIGN §4.15): a run recorded before the runner skipped it.
	traceShape := run.TimeScale > 0 && strings.HasPrefix(run.NotSteadyReason, "the steady-state test failed")
	switch {
	case run.Steady || rate && (!lv.Sustainable || traceShape):
	case run.Imprecise && !rate:
		lv.Imprecise, lv.impreciseWhy = true, run.NotSteadyReason
		lv.Notes = append(lv.Notes, fmt.Sprintf("imprecise (kept): no material trend by max_duration, but %s; TPS CI half-width %.1f%% of mean (target %.1f%%)",
			run.NotSteadyReason, run.CIHalfWidth*100, run.CITarget*100))
	case run.NotSteadyReason != "":
		note("not steady: %s; CI half-width %.1f%% of mean, trend p = %.3g", run.NotSteadyReason, run.CIHalfWidth*100, run.TrendP)
	default:
		note("not steady (CI half-width %.1f%% of mean, trend p = %.3g)", run.CIHalfWidth*100, run.TrendP)
	}
	if l := lv.LittlesLawError; (!rate || lv.Sustainable) && l.OK() && float64(l) > MaxLittlesLawError {
		note("Little's-law error %.1f%% > %.0f%% (QPS × mean E2E vs achieved concurrency)", float64(l)*100, MaxLittlesLawError*100)
	}
	if run.Interrupted {
		note("interrupted during the level")
	}
	if run.Client != nil && run.Client.Bound {
		reason := run.Client.Reason
		if reason == "" {
			reason = "load generator saturated"
		}
		note("client-bound: %s", reason)
	}
	lv.Valid = valid
}

// recheck applies the validity thresholds that a level carries in its own fields to a level
// marked valid: error rate above MaxErrorRate, not steady, achieved concurrency below
// MinAchievedRatio × target (closed loop), Little's-law error above MaxLittlesLawError — on
// an arrival-rate level the last two only while it is sustainable and an imprecise level is
// not excused (validity's rules). Levels from Summarize already passed them; imported ones
// (level-summary CSV, vLLM bench JSON) had no one check. A failing level is marked invalid in
// the result (its notes are copied, never appended to the caller's slice).
func (a *analyzer) recheck(lv *Level) {
	rate := lv.IsRate()
	held := !rate || lv.Sustainable
	var why []string
	if e := lv.ErrorRate; e.OK() && float64(e) > a.opts.MaxErrorRate {
		why = append(why, fmt.Sprintf("error rate %.1f%% > %.1f%%", float64(e)*100, a.opts.MaxErrorRate*100))
	}
	if held && !lv.Steady && (rate || !lv.Imprecise) {
		why = append(why, "not steady")
	}
	// 0 is "not reported" here (a zero-value field); Summarize flags a real empty window itself.
	if !rate && lv.AchievedConcurrency > 0 {
		if w := underAchieved(lv, a.opts.Think); w != "" {
			why = append(why, w)
		}
	}
	if l := lv.LittlesLawError; held && l.OK() && float64(l) > MaxLittlesLawError {
		why = append(why, fmt.Sprintf("Little's-law error %.1f%% > %.0f%%", float64(l)*100, MaxLittlesLawError*100))
	}
	if len(why) == 0 {
		return
	}
	lv.Valid = false
	notes := slices.Clip(lv.Notes)
	for _, w := range why {
		notes = append(notes, "invalid: "+w)
	}
	lv.Notes = notes
}

// underAchieved returns why lv's achieved concurrency is below MinAchievedRatio of what its
// target keeps in flight, or "" when it is not (or is unknown): c, or with a mean think time θ
// between a worker's requests c × E2E ÷ (E2E + θ), E2E the level's mean (a worker is busy that
// share of its cycle).
func underAchieved(lv *Level, think time.Duration) string {
	a := lv.AchievedConcurrency
	if !a.OK() {
		return ""
	}
	want := float64(lv.Concurrency)
	e2e := float64(lv.E2E.Mean) / 1e3
	if think <= 0 || !lv.E2E.Mean.OK() || !(e2e > 0) {
		if float64(a) < MinAchievedRatio*want {
			return fmt.Sprintf("achieved concurrency %.2f < %.0f%% of target %d", float64(a), MinAchievedRatio*100, lv.Concurrency)
		}
		return ""
	}
	want *= e2e / (e2e + think.Seconds())
	if float64(a) < MinAchievedRatio*want {
		return fmt.Sprintf("achieved concurrency %.2f < %.0f%% of %.2f, what target %d keeps in flight with a mean think time of %v",
			float64(a), MinAchievedRatio*100, want, lv.Concurrency, think)
	}
	return ""
}
