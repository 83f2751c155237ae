package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// Thresholds of an arrival-rate level (DESIGN §4.15).
const (
	// minBacklogGrowth is the share of the realised arrival rate by which the queue must grow,
	// and the completions fall short of the arrivals, for a level to be unsustainable.
	minBacklogGrowth = 0.02
	// backlogNoise is how many times its noise a queue's growth over the window must exceed
	// for it to count as growing: a stable queue wanders, and a window catches it on the way
	// up as often as on the way down. The client-side backlog's noise is the largest of the
	// samples' residual standard deviation around the trend line, √(2 × their mean) (the
	// standard deviation of the difference of two Poisson counts of that mean: a stable
	// backlog's start and end) and one request; the server's waiting count's is the largest
	// of its samples' residual standard deviation and one request.
	backlogNoise = 3.0
	// shortfallNoise is how many times the noise of a Poisson count of the window's arrivals,
	// √(realised × window), the completions over the window must fall short of those arrivals
	// for a level to be unsustainable: a stable queue that a burst of arrivals filled late in
	// the window falls short of them by about that much. Measured on discrete-step models of
	// a 4-slot server of 0.72 s requests and of the demo engine (analysis/arrivalsim_test.go, 40
	// seeds per rate, DESIGN §4.15): 1 called a few levels at 0.9–0.95 × capacity
	// unsustainable, 1.25 none, 2 found half as many at 1.2 × with 10 s windows.
	shortfallNoise = 1.25
	// maxRateDeficit is the shortfall of a table level's completion rate (qps) below its
	// offered rate (rate_rps) from which it is unsustainable, when the table does not say
	// (no sustainable column and no backlog measured).
	maxRateDeficit = 0.05
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

// completionRate is lv.CompletionRate as a float64 (NaN when unknown).
func completionRate(lv *Level) float64 { return float64(lv.CompletionRate()) }

// recheckSustainable marks unsustainable a level marked sustainable whose backlog was not
// measured (a table) when its completion rate falls more than maxRateDeficit below its
// arrival rate (Level.ArrivalRate: realised, else offered; completionRate), with a note. A
// closed-loop level has no sustainability to recheck.
func recheckSustainable(lv *Level) {
	if lv.RateLevel == nil || !lv.Sustainable || lv.BacklogGrowthRPS.OK() {
		return
	}
	x, q := float64(lv.ArrivalRate()), completionRate(lv)
	if !finite(q) || !(q < (1-maxRateDeficit)*x) {
		return
	}
	what := "offered"
	if lv.RealizedRPS.OK() {
		what = "realised"
	}
	lv.Sustainable = false
	lv.Notes = append(slices.Clip(lv.Notes), fmt.Sprintf("unsustainable: its completion rate %s requests/s is %.0f%% below the %s %s (more than %.0f%%; no backlog measured); kept as a point above capacity",
		Float(q).Format(), 100*(1-q/x), what, Float(x).Format(), maxRateDeficit*100))
}

// offSchedule gathers the valid open-loop levels that did not keep their schedule, for one
// warning each kind.
type offSchedule struct {
	rate     []*Level // achieved rate off the offered (rateOff)
	realized []*Level // realised rate astray from the offered (realizedAstray)
	lagged   []*Level // schedule lag too long (lagTooLong)
}

// add files lv, a valid level, where it belongs; a closed-loop level has no schedule.
func (o *offSchedule) add(lv *Level) {
	if !lv.IsRate() {
		return
	}
	if rateOff(lv) {
		o.rate = append(o.rate, lv)
	}
	if realizedAstray(lv) {
		o.realized = append(o.realized, lv)
	}
	if lagTooLong(lv) {
		o.lagged = append(o.lagged, lv)
	}
}

// warn gives a's warnings of the levels filed.
func (o *offSchedule) warn(a *analyzer) {
	if len(o.rate) > 0 {
		a.warn(rateAchievedOff(o.rate))
	}
	if len(o.realized) > 0 {
		a.warn(rateRealizedOff(o.realized))
	}
	if len(o.lagged) > 0 {
		a.warn(rateLagged(o.lagged))
	}
}

// rateOff reports whether a level's achieved rate is more than max(MaxRateOff, 3 ÷
// √(offered × window)) from its offered rate.
func rateOff(lv *Level) bool {
	x, got := float64(lv.OfferedRPS), float64(lv.AchievedRPS)
	if !finite(got) || !(x > 0) {
		return false
	}
	tol := MaxRateOff
	if w := float64(lv.WindowS); finite(w) && w > 0 {
		tol = math.Max(tol, 3/math.Sqrt(x*w))
	}
	return math.Abs(got/x-1) > tol
}

// realizedAstray reports whether a level's realised rate is not record.RealizedWithin its
// offered rate (a table without a window: MaxRealizedOff alone).
func realizedAstray(lv *Level) bool {
	w := float64(lv.WindowS)
	if !finite(w) || !(w > 0) {
		w = math.Inf(1)
	}
	return lv.RealizedRPS.OK() && !record.RealizedWithin(float64(lv.RealizedRPS), float64(lv.OfferedRPS), w)
}

// lagTooLong reports whether a sustainable level's schedule lag p99 exceeds
// max(MaxScheduleLagMS, MaxScheduleLagShare × its TTFT p50 from the send time).
func lagTooLong(lv *Level) bool {
	p99 := float64(lv.ScheduleLag.P99)
	if !lv.Sustainable || !finite(p99) {
		return false
	}
	limit := MaxScheduleLagMS
	if t := float64(lv.TTFT.P50); finite(t) {
		limit = math.Max(limit, MaxScheduleLagShare*t)
	}
	return p99 > limit
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
func backlogOf(records []record.Record, w0, w1 int64) backlogStats {
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

// waitingTrend is the trend of the server's waiting count over a window (record.ServerStats):
// its least-squares slope (requests/s) and residual standard deviation (requests); ok is
// false when not measured.
type waitingTrend struct {
	slope, resid float64
	ok           bool
}

// waitingTrendOf reads the waiting count's trend from the server metrics of a level.
func waitingTrendOf(st *record.ServerStats) waitingTrend {
	if !st.Exposes(record.MetricWaiting) || st.WaitingGrowthRPS == nil || st.WaitingResidSD == nil {
		return waitingTrend{}
	}
	return waitingTrend{slope: *st.WaitingGrowthRPS, resid: *st.WaitingResidSD, ok: true}
}

// queueTrend is what a level's window shows of its queues: the client-side backlog and the
// server's waiting count.
type queueTrend struct {
	backlog backlogStats
	waiting waitingTrend
}

// unsustainable returns why the queues of a level whose window of t seconds realised
// arrived requests/s, and which completed done requests/s (NaN: unknown), show it
// unsustainable (the rule of arrivals.finish), or "".
func (q queueTrend) unsustainable(arrived, t, done float64) string {
	b := q.backlog
	if !(arrived > 0) || !(float64(b.endings) < (1-minBacklogGrowth)*float64(b.arrivals)) {
		return ""
	}
	// Completions short of the realised arrivals by more than a burst of arrivals late in the
	// window leaves a stable queue: shortfallNoise × the Poisson noise of their count.
	short := (arrived - done) * t
	if finite(done) && !(done < (1-minBacklogGrowth)*arrived && short > shortfallNoise*math.Sqrt(arrived*t)) {
		return ""
	}
	var grew []string
	if b.slope > minBacklogGrowth*arrived && b.slope*t > backlogNoise*b.noise() {
		grew = append(grew, fmt.Sprintf("the backlog grew %s requests/s (%.0f requests over the window, against a noise of %.1f)",
			Float(b.slope).Format(), b.slope*t, b.noise()))
	}
	if w := q.waiting; w.ok && w.slope > minBacklogGrowth*arrived && w.slope*t > backlogNoise*math.Max(w.resid, 1) {
		grew = append(grew, fmt.Sprintf("the server's waiting count grew %s requests/s (%.0f over the window, against a noise of %.1f)",
			Float(w.slope).Format(), w.slope*t, math.Max(w.resid, 1)))
	}
	if len(grew) == 0 {
		return ""
	}
	return fmt.Sprintf("%s completed per second for %s arriving (%d of %d arrivals ended in the window, %.0f requests short against a Poisson noise of %.1f) while %s",
		Float(done).Format(), Float(arrived).Format(), b.endings, b.arrivals, short, math.Sqrt(arrived*t), strings.Join(grew, " and "))
}

// realizedNote is the note of a level whose realised arrival rate over a window of windowS
// seconds is not record.RealizedWithin its offered rate, or "".
func realizedNote(offered, realized, windowS float64) string {
	if !(offered > 0) || !finite(realized) || record.RealizedWithin(realized, offered, windowS) {
		return ""
	}
	return fmt.Sprintf("realised arrival rate %s requests/s, %s the offered %s (more than %.0f%%): the level is placed and judged at %s",
		Float(realized).Format(), offPct(realized, offered), Float(offered).Format(), 100*record.MaxRealizedOff, Float(realized).Format())
}

// offPct says how far v is from ref: "22% below", "8% above".
func offPct(v, ref float64) string {
	if v < ref {
		return fmt.Sprintf("%.0f%% below", 100*(1-v/ref))
	}
	return fmt.Sprintf("%.0f%% above", 100*(v/ref-1))
}
