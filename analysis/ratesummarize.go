package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kneecap/kneecap/sweep"
)

// Thresholds of an arrival-rate level (DESIGN §4.15).
const (
	// MinBacklogGrowth is the share of the offered rate by which the backlog must grow, and
	// the departures fall short of the arrivals, for a level to be unsustainable.
	MinBacklogGrowth = 0.02
	// BacklogNoise is how many times the backlog's noise the growth over the window must
	// exceed for a level to be unsustainable: a stable queue wanders, and a window catches it
	// on the way up as often as on the way down. The noise is the largest of the samples'
	// residual standard deviation around the trend line, √(2 × their mean) (the standard
	// deviation of the difference of two Poisson counts of that mean: a stable backlog's start
	// and end) and one request; the shortfall of the completion rate below the offered rate is
	// held to BacklogNoise × √(offered × window), the noise of a Poisson count of the
	// arrivals. On the batching engine, 40 seeds per rate, the rule called no level at
	// 0.75–1.05 × capacity unsustainable with windows of 5, 10 and 30 s, and found 36 of 40 at
	// 1.3 × with 5 s windows, 39 at 1.2 × with 10 s, 38 at 1.1 × with 30 s, all at 1.5 × and 2 ×
	// (TestRateSustainableRule checks a part of it).
	BacklogNoise = 3.0
	// MaxRateDeficit is the shortfall of a table level's completion rate (qps) below its
	// offered rate (rate_rps) from which it is unsustainable, when the table does not say
	// (no sustainable column and no backlog measured).
	MaxRateDeficit = 0.05
	// MaxRateOff is the relative difference between the achieved and the offered rate beyond
	// which a level is flagged (as is three times the relative noise of a Poisson count of
	// its arrivals, 3 ÷ √(offered × window), when that is larger).
	MaxRateOff = 0.02
	// MaxScheduleLagMS and MaxScheduleLagShare bound the schedule lag p99 of a sustainable
	// level: above max(1 ms, 1% of its TTFT p50) it is flagged (the client did not keep its
	// schedule).
	MaxScheduleLagMS    = 1.0
	MaxScheduleLagShare = 0.01
	// backlogSamples is the number of equal steps at which the backlog is sampled over the
	// window for its trend (backlogSamples + 1 samples, both ends included).
	backlogSamples = 100
)

// summarizeRate summarizes an arrival-rate level (run.OfferedRPS > 0) from its records
// (DESIGN §1, §4.15). Per level, with window [W0, W1) and T = W1 − W0:
//   - the latency population is the window's arrivals, the requests whose scheduled time
//     (Record.Scheduled; the send time for a record without one) lies in the window,
//     whenever they were sent: requests, errors and the TTFT, TPOT, ITL and E2E statistics
//     (from the send time) cover them, as do ttft_scheduled_ms and e2e_scheduled_ms (TTFT +
//     lag and E2E + lag, from the scheduled time) and schedule_lag_ms (Sent − Scheduled, over
//     every arrival whatever its status); token lengths and usage too;
//   - achieved_rps = requests sent in the window ÷ T;
//   - output TPS, its CI, QPS (the completion rate), input TPS, achieved concurrency and
//     Little's law are the closed loop's window metrics;
//   - goodput counts the requests completed in the window whose TTFT + lag, E2E + lag and
//     TPOT meet the SLO;
//   - backlog_growth_rps is the least-squares slope of the backlog B(t) = arrivals by t −
//     requests ended by t (every record of the level), sampled at backlogSamples + 1 equal
//     steps over the window; the level is unsustainable when that slope exceeds
//     MinBacklogGrowth × offered, the growth over the window (slope × T) exceeds BacklogNoise
//     × the backlog's noise (backlogStats.noise), the requests that ended in the window are
//     fewer than (1 − MinBacklogGrowth) × the window's arrivals, and the completion rate
//     (Level.CompletionRate) falls short of the offered rate by more than MinBacklogGrowth
//     of it and by more than BacklogNoise × √(offered × T) requests over the window (the
//     noise of a Poisson count of the arrivals): a level that completed what it was offered
//     kept up, whatever a burst at the end of its window did to the backlog.
//
// It is invalid (with a note each) when its window is empty, no arrival succeeded, the error
// rate exceeds MaxErrorRate, it was interrupted or client-bound, and — only while sustainable,
// since a growing backlog is the finding of an unsustainable level — when it was not steady
// or its Little's-law error exceeds 10%. There is no achieved-concurrency check: an open loop
// has no target concurrency.
func (s *scratch) summarizeRate(run *sweep.LevelRun, records []sweep.Record, opts Options) Level {
	lv := emptyLevel(run)
	rl := NewRateLevel(run.OfferedRPS)
	rl.TimeScale = Float(run.TimeScale)
	lv.RateLevel = rl
	w0, w1 := run.W0, run.W1
	if w1 <= w0 {
		lv.Notes = append(lv.Notes, fmt.Sprintf("invalid: empty measurement window [%d, %d)", w0, w1))
		rateValidity(&lv, run, opts, false)
		return lv
	}
	lv.WindowS = Float(sweep.WindowSeconds(w0, w1))
	win := sweep.NewWindowTotals(w0, w1, min(max(run.Slices, minSlices), maxSlices))
	slo := opts.SLO.requestLimits()
	var good goodput
	var arrived sentStats
	var lags, ttftSched, e2eSched []float64
	var pop []sweep.Record // the window's arrivals
	sent := 0
	s.ttft, s.tpot, s.e2e, s.itl = s.ttft[:0], s.tpot[:0], s.e2e[:0], s.itl[:0]
	s.ttftKernel = s.ttftKernel[:0]
	s.clock.reset()
	for i := range records {
		r := &records[i]
		win.Add(r)
		if sweep.SentInWindow(r, w0, w1) {
			sent++
		}
		lag := r.Lag()
		if sweep.CompletedInWindow(r, w0, w1) && slo.met(shifted(r, lag)) {
			good.requests++
			good.tokens += float64(r.OutputTokens)
		}
		if !sweep.ArrivedInWindow(r, w0, w1) {
			continue
		}
		pop = append(pop, *r)
		s.addSent(&arrived, r)
		lags = append(lags, float64(r.StartLag())/1e6)
		if r.OK() {
			if r.TTFT > 0 {
				ttftSched = append(ttftSched, float64(r.TTFT+lag)/1e6)
			}
			e2eSched = append(e2eSched, float64(r.E2E+lag)/1e6)
		}
	}
	s.fill(&lv, win, &arrived, good)
	if c := arrived.classes[string(sweep.ErrCancelled)]; c > 0 {
		// The client's cancellations (queued unsent when issuing stopped, or in flight at
		// drain_timeout) are the backlog an unsustainable level leaves, not the server's
		// errors: error_classes counts them, the error rate does not.
		lv.ErrorRate = Float(float64(arrived.errors-c) / float64(arrived.requests))
	}
	rl.AchievedRPS = Float(win.PerSecond(float64(sent)))
	rl.ScheduleLag, rl.TTFTScheduled, rl.E2EScheduled = LatencyOf(lags), LatencyOf(ttftSched), LatencyOf(e2eSched)
	b := backlogOf(records, w0, w1)
	rl.BacklogGrowthRPS = Float(b.slope)
	if why := b.unsustainable(run.OfferedRPS, sweep.WindowSeconds(w0, w1), float64(lv.CompletionRate())); why != "" {
		rl.Sustainable = false
		lv.Notes = append(lv.Notes, "unsustainable: "+why+"; kept as a point above capacity")
	}
	// Lengths and usage over the window's arrivals: every record of pop passes the bounds.
	summarizeLengths(&lv, pop, math.MinInt64, math.MaxInt64, opts.Lengths)
	summarizeUsage(&lv, pop, math.MinInt64, math.MaxInt64)
	summarizePrefixCache(&lv, run, pop, (*sweep.Record).OK)
	rateValidity(&lv, run, opts, arrived.ok > 0)
	return lv
}

// shifted returns a copy of r with its TTFT and E2E measured from the scheduled time (lag
// added): what the SLO of goodput judges on a rate level.
func shifted(r *sweep.Record, lag time.Duration) *sweep.Record {
	c := *r
	if c.TTFT > 0 {
		c.TTFT += lag
	}
	c.E2E += lag
	return &c
}

// backlogStats is the backlog of a level over its window: the least-squares slope of B(t)
// (requests/s), the residual standard deviation of the samples around that line (requests),
// and the arrivals and endings counted in the window.
type backlogStats struct {
	slope, resid, mean float64
	arrivals, endings  int
}

// backlogOf samples B(t) = #{arrivals ≤ t} − #{endings ≤ t} over every record (an arrival is
// Record.Arrival, an ending Record.Done, whatever the status) at backlogSamples + 1 equal
// steps of [w0, w1] and fits a line by least squares.
func backlogOf(records []sweep.Record, w0, w1 int64) backlogStats {
	var b backlogStats
	arr := make([]int64, 0, len(records))
	end := make([]int64, 0, len(records))
	for i := range records {
		r := &records[i]
		a, d := r.Arrival(), r.Done()
		arr, end = append(arr, a), append(end, d)
		if a >= w0 && a < w1 {
			b.arrivals++
		}
		if d >= w0 && d < w1 {
			b.endings++
		}
	}
	slices.Sort(arr)
	slices.Sort(end)
	upTo := func(ts []int64, t int64) int { i, _ := slices.BinarySearch(ts, t+1); return i }
	n := backlogSamples + 1
	xs, ys := make([]float64, n), make([]float64, n)
	for j := range n {
		t := w0 + int64(float64(w1-w0)*float64(j)/backlogSamples)
		xs[j] = float64(t-w0) / 1e9
		ys[j] = float64(upTo(arr, t) - upTo(end, t))
	}
	b.slope, b.resid = slopeResid(xs, ys)
	b.mean = mean(ys)
	return b
}

// slopeResid fits y = a + b·x by least squares and returns b and the residual standard
// deviation √(SSE ÷ (n − 2)); NaN for fewer than 3 points or no spread in x.
func slopeResid(xs, ys []float64) (slope, resid float64) {
	n := float64(len(xs))
	if len(xs) < 3 {
		return math.NaN(), math.NaN()
	}
	mx, my := mean(xs), mean(ys)
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if !(sxx > 0) {
		return math.NaN(), math.NaN()
	}
	slope = sxy / sxx
	var sse float64
	for i := range xs {
		e := ys[i] - (my + slope*(xs[i]-mx))
		sse += e * e
	}
	return slope, math.Sqrt(sse / (n - 2))
}

// noise is the backlog's noise: the largest of the residual standard deviation, √(2 × the
// mean backlog) and 1 request.
func (b backlogStats) noise() float64 {
	return math.Max(math.Max(b.resid, math.Sqrt(2*b.mean)), 1)
}

// unsustainable returns why the backlog b of a level offered offered requests/s over a
// window of t seconds, whose completion rate was done requests/s (NaN: unknown), shows it
// unsustainable (the rule of summarizeRate), or "".
func (b backlogStats) unsustainable(offered, t, done float64) string {
	grow := b.slope*t > BacklogNoise*b.noise()
	if !(b.slope > MinBacklogGrowth*offered) || !grow || !(float64(b.endings) < (1-MinBacklogGrowth)*float64(b.arrivals)) {
		return ""
	}
	// A level that completed about its offered rate kept up, whatever a burst of arrivals at
	// the end of its window did to the backlog: the shortfall must exceed the noise of a
	// Poisson count of the arrivals, √(offered × t), BacklogNoise times.
	if finite(done) && !(done < (1-MinBacklogGrowth)*offered && (offered-done)*t > BacklogNoise*math.Sqrt(offered*t)) {
		return ""
	}
	return fmt.Sprintf("the backlog grew %s requests/s (%.0f%% of the offered %s; %.0f requests over the window, against a noise of %.1f) while %d requests ended for %d arrivals, %s completed per second",
		Float(b.slope).Format(), 100*b.slope/offered, Float(offered).Format(), b.slope*t, b.noise(), b.endings, b.arrivals, Float(done).Format())
}

// rateValidity sets lv.Valid for an arrival-rate level and notes each reason it is invalid.
func rateValidity(lv *Level, run *sweep.LevelRun, opts Options, anyOK bool) {
	valid := lv.WindowS.OK()
	note := func(format string, args ...any) {
		valid = false
		lv.Notes = append(lv.Notes, "invalid: "+fmt.Sprintf(format, args...))
	}
	if lv.WindowS.OK() && !anyOK {
		note("no request scheduled in the window succeeded")
	}
	if e := lv.ErrorRate; e.OK() && float64(e) > opts.MaxErrorRate {
		note("error rate %.1f%% > %.1f%%", float64(e)*100, opts.MaxErrorRate*100)
	}
	// A trace level is judged by its backlog, not by the steady-state test, whose trend is
	// the trace's own shape (DESIGN §4.15): a run recorded before the runner skipped it.
	traceShape := run.TimeScale > 0 && strings.HasPrefix(run.NotSteadyReason, "the steady-state test failed")
	if lv.Sustainable && !run.Steady && !traceShape {
		if r := run.NotSteadyReason; r != "" {
			note("not steady: %s; CI half-width %.1f%% of mean, trend p = %.3g", r, run.CIHalfWidth*100, run.TrendP)
		} else {
			note("not steady (CI half-width %.1f%% of mean, trend p = %.3g)", run.CIHalfWidth*100, run.TrendP)
		}
	}
	if l := lv.LittlesLawError; lv.Sustainable && l.OK() && float64(l) > MaxLittlesLawError {
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
