package analysis

import (
	"time"

	"github.com/kneecap/kneecap/record"
)

// RateLevel is what an arrival-rate (open-loop) level measures beside the numbers every level
// has (DESIGN §1, §4.15). Level embeds it as a pointer, nil on a closed-loop level, so its
// keys sit flat in levels[] of analysis.json and a closed-loop level has none of them.
//
// A rate level's latency population is its window's arrivals: the requests scheduled inside
// the window (Record.Scheduled), whenever they were sent. Level's TTFT and E2E are measured
// from the send time (the server's view); TTFTScheduled and E2EScheduled from the scheduled
// arrival (the user's view, free of coordinated omission), over the same requests.
type RateLevel struct {
	// OfferedRPS is the arrival rate the level's schedule offered, in requests/s (rate_rps
	// of a level-summary CSV).
	OfferedRPS Float `json:"offered_rps"`
	// AchievedRPS is the requests sent inside the window ÷ its length: the arrival rate the
	// server received, in requests/s.
	AchievedRPS Float `json:"achieved_rps"`
	// RealizedRPS is the window's arrivals (the requests scheduled inside it, whenever sent)
	// ÷ its length, in requests/s: the rate the schedule's random draw realised, the level's
	// place on the rate axis and what its sustainability is judged against (DESIGN §4.15);
	// null when not measured (a table without realized_rps: the offered rate stands in).
	RealizedRPS Float `json:"realized_rps"`
	// Sustainable reports that the replica kept up with the arrivals: false when its
	// completions fell short of the window's realised arrivals while a queue grew, the
	// backlog or the server's waiting count (the rule of DESIGN §4.15). An unsustainable
	// level is a point above capacity, not an invalid one.
	Sustainable bool `json:"sustainable"`
	// BacklogGrowthRPS is the least-squares slope of the backlog over the window, in
	// requests/s: the backlog at t is the requests arrived (scheduled) by t less those ended
	// by t, so it counts requests waiting client-side for max_concurrency as well as those in
	// flight. About offered − capacity past capacity, about 0 below it; null when not measured
	// (a level-summary CSV without backlog_growth_rps).
	BacklogGrowthRPS Float `json:"backlog_growth_rps"`
	// ScheduleLag summarises Sent − Scheduled over the window's arrivals, in milliseconds:
	// the client's lateness, and the wait for a free place under max_concurrency.
	ScheduleLag Latency `json:"schedule_lag_ms"`
	// TTFTScheduled and E2EScheduled summarise TTFT + lag and E2E + lag of the successful
	// requests among the window's arrivals, in milliseconds: latencies from the scheduled
	// arrival, what a user arriving then waited.
	TTFTScheduled Latency `json:"ttft_scheduled_ms"`
	E2EScheduled  Latency `json:"e2e_scheduled_ms"`
	// TimeScale is a trace replay's time scale at this level (the trace's arrival times ÷
	// it: 2 = twice the recorded traffic); 0 (absent) when the level did not replay a trace.
	TimeScale Float `json:"time_scale,omitempty"`
}

// NewRateLevel returns the rate fields of a level offered offered requests/s, every
// measurement null and the level sustainable.
func NewRateLevel(offered float64) *RateLevel {
	return &RateLevel{OfferedRPS: Float(offered), AchievedRPS: NaN(), RealizedRPS: NaN(), Sustainable: true, BacklogGrowthRPS: NaN(),
		ScheduleLag: NoLatency(), TTFTScheduled: NoLatency(), E2EScheduled: NoLatency()}
}

// UserTTFT and UserE2E return the latencies a user waited: measured from the scheduled
// arrival on a rate level that has them, else from the send time (a level-summary CSV, a
// closed-loop level).
func (l *Level) UserTTFT() Latency {
	if l.RateLevel != nil && hasLatency(l.TTFTScheduled) {
		return l.TTFTScheduled
	}
	return l.TTFT
}

// UserE2E: see UserTTFT.
func (l *Level) UserE2E() Latency {
	if l.RateLevel != nil && hasLatency(l.E2EScheduled) {
		return l.E2EScheduled
	}
	return l.E2E
}

// CompletionRate returns the level's completion rate in requests/s, the y of the capacity's
// model (DESIGN §4.15): its output TPS ÷ its mean output tokens, else its QPS; NaN when
// neither is known. The tokens of a window flow smoothly where the completions of a saturated
// batch come in bursts (slots admitted together finish together), so the first is the
// steadier count of the requests served: capacity = X ÷ mean N_out. With user cancels the
// requests served are the completed and the cancelled ones, whose tokens X counts too
// (servedOutputTokens).
func (l *Level) CompletionRate() Float {
	if t, n := l.OutputTPS, l.servedOutputTokens(); t.OK() && n.OK() && n > 0 && t >= 0 {
		return t / n
	}
	if l.QPS.OK() && l.QPS >= 0 {
		return l.QPS
	}
	return NaN()
}

// hasLatency reports whether some statistic of t is known.
func hasLatency(t Latency) bool {
	return t.Mean.OK() || t.P50.OK() || t.P90.OK() || t.P95.OK() || t.P99.OK()
}

// RateResult is the answer of an arrival-rate run (analysis.json's rate, DESIGN §4.15): the
// capacity with its interval, the TTFT blow-up rate and the SLO point on the rate axis. Every
// value not computed is null, with a warning saying why.
type RateResult struct {
	// LatencyFrom says which latencies the SLO point, goodput and the TTFT blow-up read:
	// "scheduled" (from each request's scheduled arrival, the user's view: every valid level
	// has them), "sent" (from the send time: a table without the *_scheduled columns) or
	// "mixed" (some levels have them, the others are read from the send time).
	LatencyFrom string `json:"latency_from"`
	// CapacityRPS is the maximum sustainable rate in requests/s: between the largest
	// sustained and the smallest unsustained realised rate, where the completion rate of the
	// unsustained levels puts it (CapacityBound says when it is a bound instead), never above
	// the largest completion rate measured.
	CapacityRPS Float `json:"capacity_rps"`
	// CapacityInterval is a 95% interval of CapacityRPS, [low, high] (DESIGN §4.15).
	CapacityInterval [2]Float `json:"capacity_interval"`
	// CapacityTPS is the output tokens/s at capacity: the mean output TPS of the unsustained
	// levels, scaled as CapacityRPS was when the bracket clamped it.
	CapacityTPS Float `json:"capacity_tps"`
	// CapacityBound is "" when the capacity was estimated (between a sustained and an
	// unsustained level, or from a table's plateau), "at_least" when every valid level
	// sustained its rate (CapacityRPS is then the smaller of the largest realised rate and
	// the largest completion rate, a lower bound) and "at_most" when none did (the first
	// level's completion rate, below its realised rate).
	CapacityBound string `json:"capacity_bound,omitempty"`
	// CapacityBracket holds the realised rates CapacityRPS lies between: the largest
	// sustained below the smallest unsustained, and that one (a table's plateau: the last
	// offered rate on the rise and the first on the plateau).
	CapacityBracket []Float `json:"capacity_bracket,omitempty"`
	// CapacityReason says how the capacity was read, as the reports print it.
	CapacityReason string `json:"capacity_reason,omitempty"`
	// CapacityRule names the rule that read it: capacityRuleSplit (between the sustained and
	// the unsustained levels) or CapacityRulePlateau (a table's plateau of output TPS); empty
	// when there is no capacity.
	CapacityRule string `json:"capacity_rule,omitempty"`
	// TTFTBlowupRPS is the (realised) arrival rate past which TTFT grows (queueing), in
	// requests/s.
	TTFTBlowupRPS Float `json:"ttft_blowup_rps"`
	// TTFTBlowupMethod is MethodHinge (the fitted ramp) or method3xBaseline.
	TTFTBlowupMethod Method `json:"ttft_blowup_method,omitempty"`
	// TTFTBlowupStat names the TTFT statistic the blow-up was found on: p50, else mean, else
	// p90, else p95, the first that two valid levels report.
	TTFTBlowupStat string `json:"ttft_blowup_stat,omitempty"`
	// TTFTBlowupBaselineMS is the flat TTFT before the blow-up, in ms; TTFTBlowupSlope the
	// growth per added request/s past it (hinge only), in ms per request/s.
	TTFTBlowupBaselineMS Float `json:"ttft_blowup_baseline_ms"`
	TTFTBlowupSlope      Float `json:"ttft_blowup_slope_ms_per_rps"`
	// SLORPS is the largest (realised) arrival rate meeting every SLO, interpolated linearly between
	// the last passing and the first failing valid level, never above CapacityRPS; null
	// when even the first level fails. SLO.Limit names what binds, SLO.Checked what was
	// checked.
	SLORPS Float `json:"slo_rps"`
	// SLOBracket holds the realised rates SLORPS lies between.
	SLOBracket []Float `json:"slo_bracket,omitempty"`
	// SLOTPS is the output tokens/s at SLORPS (interpolated like it).
	SLOTPS Float `json:"slo_tps"`
	// SLOGoodputRPS is the goodput at SLORPS, requests/s meeting every SLO: SLORPS times the
	// good share (goodput ÷ completion rate) of the last passing level.
	SLOGoodputRPS Float `json:"slo_goodput_rps"`
	// MaxTPSRPS is the offered rate of the valid level with the largest output TPS
	// (throughput.max_tps).
	MaxTPSRPS Float `json:"max_tps_rps"`
}

// NewRateResult returns a RateResult with every value null: the rate answer of an arrival-rate
// run before it is computed, and the reports' stand-in for an analysis.json without one.
func NewRateResult() *RateResult {
	n := NaN()
	return &RateResult{CapacityRPS: n, CapacityInterval: [2]Float{n, n}, CapacityTPS: n, TTFTBlowupRPS: n,
		TTFTBlowupBaselineMS: n, TTFTBlowupSlope: n, SLORPS: n, SLOTPS: n, SLOGoodputRPS: n, MaxTPSRPS: n}
}

// arrivals tallies what an arrival-rate level measures beside the numbers every level has
// (RateLevel; DESIGN §1, §4.15). Per level, with window [w0, w1) and T = w1 − w0:
//   - the latency population is the window's arrivals (population): requests, errors, the
//     TTFT, TPOT, ITL and E2E statistics (from the send time), token lengths and usage cover
//     them, as do ttft_scheduled_ms and e2e_scheduled_ms (TTFT + lag and E2E + lag, from the
//     scheduled time) and schedule_lag_ms (Sent − ConnWait − Scheduled, over every arrival
//     whatever its status);
//   - realized_rps = the window's arrivals ÷ T (the rate the schedule's draw realised, the
//     level's place on the rate axis), with a note when it is not record.RealizedWithin the
//     offered rate; achieved_rps = requests sent in the window ÷ T;
//   - goodput counts the requests completed in the window whose TTFT + lag, E2E + lag and
//     TPOT meet the SLO;
//   - backlog_growth_rps is the least-squares slope of the backlog B(t) = arrivals by t −
//     requests ended by t (every record of the level), sampled at backlogSamples + 1 equal
//     steps over the window; the level is unsustainable (queueTrend.unsustainable) when its
//     completions fall short of its realised arrivals — the completion rate
//     (Level.CompletionRate) below (1 − minBacklogGrowth) × realized_rps by more than
//     shortfallNoise × √(realized × T) requests over the window, and fewer than (1 −
//     minBacklogGrowth) of the window's arrivals ended in it — while a queue grows: the
//     backlog (client side) or the server's waiting count (run.Server's waiting trend), by
//     more than minBacklogGrowth × realized_rps per second and backlogNoise × its noise over
//     the window.
//
// Its validity differs (validity): no achieved-concurrency check, since an open loop has no
// target concurrency, and steadiness and Little's law only while sustainable, since a growing
// backlog is the finding of an unsustainable level.
type arrivals struct {
	w0, w1                    int64
	sent                      int       // requests sent in the window
	lags, ttftSched, e2eSched []float64 // over the window's arrivals, in milliseconds
}

// add tallies r, any record of the level.
func (a *arrivals) add(r *record.Record) {
	if record.SentInWindow(r, a.w0, a.w1) {
		a.sent++
	}
	if !record.ArrivedInWindow(r, a.w0, a.w1) {
		return
	}
	lag := r.Lag()
	a.lags = append(a.lags, ms(r.StartLag()))
	if r.OK() {
		if r.TTFT > 0 {
			a.ttftSched = append(a.ttftSched, ms(r.TTFT+lag))
		}
		a.e2eSched = append(a.e2eSched, ms(r.E2E+lag))
	}
}

// finish sets lv.RateLevel's measurements from the tallies, the window's totals win, the
// arrivals' sums pop and every record of the level, and notes an unsustainable level.
func (a *arrivals) finish(lv *Level, run *record.LevelRun, win *record.WindowTotals, pop *sentStats, records []record.Record) {
	rl := lv.RateLevel
	if c := pop.classes[string(record.ErrCancelled)]; c > 0 {
		// The client's cancellations (queued unsent when issuing stopped, or in flight at
		// drain_timeout) are the backlog an unsustainable level leaves, not the server's
		// errors: error_classes counts them, the error rate does not.
		lv.ErrorRate = Float(float64(pop.errors-c) / float64(pop.requests))
	}
	rl.AchievedRPS = Float(win.PerSecond(float64(a.sent)))
	rl.RealizedRPS = Float(win.PerSecond(float64(pop.requests)))
	rl.ScheduleLag, rl.TTFTScheduled, rl.E2EScheduled = LatencyOf(a.lags), LatencyOf(a.ttftSched), LatencyOf(a.e2eSched)
	if n := realizedNote(run.OfferedRPS, float64(rl.RealizedRPS), float64(lv.WindowS)); n != "" {
		lv.Notes = append(lv.Notes, n)
	}
	b := backlogOf(records, a.w0, a.w1)
	rl.BacklogGrowthRPS = Float(b.slope)
	q := queueTrend{backlog: b, waiting: waitingTrendOf(run.Server)}
	if why := q.unsustainable(float64(rl.RealizedRPS), record.WindowSeconds(a.w0, a.w1), completionRate(lv)); why != "" {
		rl.Sustainable = false
		lv.Notes = append(lv.Notes, "unsustainable: "+why+"; kept as a point above capacity")
	}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }
