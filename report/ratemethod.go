package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// rateMethodNotes are the definitions and rules of an arrival-rate run (DESIGN §1, §4.15), as
// (name, formula) pairs, printed beside the numbers.
var rateMethodNotes = [][2]string{
	{"offered rate", "the arrival rate the level's schedule offered (requests/s); arrivals Poisson, gamma or evenly spaced as configured; names the level"},
	{"realised rate", "the window's arrivals ÷ (W1 − W0): the rate the schedule's random draw offered the server; each level is placed on the rate axis, in the charts and the answers (capacity, SLO point, TTFT blow-up) and judged there (the offered rate for a table without it); a live window extends slice by slice up to max_duration until it is within 5% of the offered rate (or one arrival of its count, when that is wider), and a level further off is flagged"},
	{"window's arrivals", "the requests scheduled inside the window [W0, W1), whenever they were sent: the latency population of a rate level"},
	{"schedule lag", "t_send − t_scheduled: the client's lateness plus any wait for a free place under max_concurrency; flagged above max(1 ms, 1% of TTFT p50) at a sustainable level"},
	{"TTFT, E2E (from the scheduled arrival)", "TTFT + lag and E2E + lag: what a user arriving on schedule waited (no coordinated omission); TTFT and E2E from send are the server's view"},
	{"TTFT", "t(first chunk with non-empty content or reasoning_content) − t_send; a role-only chunk does not count"},
	{"E2E", "t(last content chunk) − t_send"},
	{"TPOT", "(E2E − TTFT) ÷ (N_out − 1), per request; undefined for N_out ≤ 1"},
	{"achieved rate", "requests sent inside the window ÷ (W1 − W0); flagged more than max(2%, 3 ÷ √(offered × window)) off the offered rate"},
	{"completed (completion rate)", "output TPS ÷ mean output tokens (QPS when either is missing): requests served per second, from the smooth flow of tokens"},
	{"output TPS", "output tokens whose chunk arrived inside the window [W0, W1) ÷ (W1 − W0)"},
	{"goodput", "requests completed inside the window whose TTFT + lag, E2E + lag and TPOT meet every SLO ÷ (W1 − W0)"},
	{"backlog growth", "least-squares slope over the window of B(t) = requests arrived by t − requests ended by t, at 101 equal steps (requests/s; waits under max_concurrency included)"},
	{"server waiting growth", "least-squares slope of the server's waiting count (vllm:num_requests_waiting and kin) over the window's scrapes (requests/s), with its residual standard deviation"},
	{"sustainable", "unsustainable when the completions fall short of the window's realised arrivals — the completion rate more than 2% below the realised rate, by more than 1.25 × √(realised × window) requests (the noise of a Poisson count of them), fewer than 98% of the arrivals ended in the window — while a queue grows: the backlog by more than 2% of the realised rate and 3 × its noise (the largest of its residual standard deviation, √(2 × its mean) and 1 request) over the window, or the server's waiting count by more than 2% of it and 3 × its noise (the largest of its residual standard deviation and 1); a table without a backlog: a completion rate more than 5% below the offered rate. An unsustainable level is a point above capacity, not invalid"},
	{"capacity", "the maximum sustainable rate: the levels, by realised rate, are split where the sustainable verdicts disagree least with sustainable below, unsustainable above; capacity = mean completion rate of the unsustainable levels above the split, at least the last sustained level's completion rate and at most the first unsustained realised rate (the completion rate when none sustained); never above the largest completion rate measured: when every level sustained, at least min(the largest realised rate, the largest completion rate); capacity_tps = their mean output TPS"},
	{"capacity from a table's plateau", "a table without achieved or realised rates, sustainable or backlog columns: the hinge y = a + b·min(x, c) fitted to its output TPS over the offered rate, capacity at the breakpoint c (the plateau ÷ output tokens per request where the table gives them), its interval the plateau's onset [last rate on the rise, first on the plateau]; output tokens per request falling past the onset is quoted as supporting evidence"},
	{"capacity interval", "95%: residual bootstrap (Pearson residuals (y − ŷ) ÷ √(ŷ ÷ T) around y = min(realised, capacity), 500 resamples by default, seed 1), the last sustained level's completion rate resampled too, at least ± the unsustainable levels' own 95% CI; with fewer than 3 levels or no bootstrap, the clamp itself, reaching down to at least the capacity less that CI; never starting above the largest completion rate measured, nor ending above that rate plus the larger of its own 95% CI and 2% of it"},
	{"TTFT blow-up rate", "the closed loop's flat-then-linear hinge on (realised rate, TTFT) over the valid levels, sustainable or not, TTFT from the scheduled arrival; its statistic p50, else mean, else p90, else p95; fallback: first level with TTFT > 3 × the first's"},
	{"SLO point", "largest (realised) arrival rate meeting every SLO (p95s from the scheduled arrival) at a sustainable level, interpolated linearly between the last passing and the first failing level, never above the capacity"},
	{"capacity plan", "replicas = max(⌈target requests/s ÷ rate⌉, ⌈target output tokens/s ÷ TPS⌉) at the SLO point and at capacity (no headroom); $ per 1M output tokens = replica $/h ÷ (TPS × 3600) × 10⁶"},
	{"Little's law", "L = λ·W at a sustainable level: |QPS × mean(E2E) − achieved concurrency| ÷ achieved concurrency; flagged above 10%"},
	{"percentiles", "linear interpolation between closest ranks (numpy.percentile default, R type 7)"},
}

// rateMethodTable lists the definitions and rules of an arrival-rate run.
func rateMethodTable() table {
	t := table{Header: []string{"quantity", "definition"}, Class: "text"}
	for _, m := range rateMethodNotes {
		t.Rows = append(t.Rows, []string{m[0], m[1]})
	}
	return t
}

// rateValidityTable holds the checks of every rate level: its achieved rate against the
// offered, its backlog, the schedule lag, Little's law (sustainable levels only), steadiness
// and the client; a failed check is marked ✗.
func rateValidityTable(res *analysis.Result) table {
	t := table{Header: []string{"offered (req/s)", "realised (÷ offered, within 5% or one arrival)", "achieved (÷ offered)", "sustainable (backlog growth, req/s)",
		"lag p99 (≤ max(1 ms, 1% TTFT p50))", "Little's-law error (≤ 10%, sustainable)", "steady", "client-bound",
		"output TPS ≈ QPS × mean N_out", "errors by class", "notes"}, Class: "text"}
	for _, l := range sortedLevels(res) {
		if !l.IsRate() {
			continue
		}
		c := checksOf(&l)
		little := c.Little
		if !l.Sustainable {
			little = check{Value: "— (unsustainable)", OK: true, Known: true}
		}
		t.Rows = append(t.Rows, []string{rateKey(&l), realizedCheck(&l).String(), achievedCheck(&l).String(), sustainableCell(&l), lagCheck(&l).String(),
			little.String(), c.Steady.String(), c.ClientBound.String(), c.TPSIdentity.String(), errorClasses(l.ErrorClasses),
			strings.Join(levelNotes(&l), "; ")})
	}
	return t
}

// achievedCheck is the achieved rate against the offered (analysis.MaxRateOff, or the noise of
// a Poisson count of the window's arrivals).
func achievedCheck(l *analysis.Level) check {
	x, got := float64(l.OfferedRPS), float64(l.AchievedRPS)
	if !finite(got) || !(x > 0) {
		return check{}
	}
	tol := analysis.MaxRateOff
	if w := float64(l.WindowS); finite(w) && w > 0 {
		tol = math.Max(tol, 3/math.Sqrt(x*w))
	}
	r := got / x
	return check{Value: fmt.Sprintf("%s (%s)", frate(l.AchievedRPS), fpct(analysis.Float(r))), OK: math.Abs(r-1) <= tol, Known: true}
}

// realizedCheck is the realised rate against the offered (record.RealizedWithin).
func realizedCheck(l *analysis.Level) check {
	x, got, w := float64(l.OfferedRPS), float64(l.RealizedRPS), float64(l.WindowS)
	if !finite(got) || !(x > 0) {
		return check{}
	}
	if !finite(w) || !(w > 0) {
		w = math.Inf(1)
	}
	return check{Value: fmt.Sprintf("%s (%s)", frate(l.RealizedRPS), fpct(analysis.Float(got/x))), OK: record.RealizedWithin(got, x, w), Known: true}
}

// lagCheck is the schedule lag p99 against max(1 ms, 1% of TTFT p50), checked at a
// sustainable level only (an unsustainable one's lag is its backlog's wait).
func lagCheck(l *analysis.Level) check {
	p99 := l.ScheduleLag.P99
	if !p99.OK() {
		return check{}
	}
	limit := analysis.MaxScheduleLagMS
	if t := float64(l.TTFT.P50); finite(t) {
		limit = math.Max(limit, analysis.MaxScheduleLagShare*t)
	}
	return check{Value: fnum(p99) + " ms", OK: !l.Sustainable || float64(p99) <= limit, Known: true}
}

// rateCompareTable is the side-by-side table of arrival-rate runs: capacity with its
// interval, the SLO point and goodput there, the TTFT blow-up rate and the maximum TPS.
func rateCompareTable(runs []*analysis.Result, labels []string) table {
	t := table{Header: []string{"run", "model", "capacity (req/s, 95% interval)", "capacity TPS (tokens/s)", "SLO point (req/s)",
		"goodput at SLO (req/s)", "binding SLO", "TTFT blow-up (req/s)", "max TPS (tokens/s) @ req/s", "warnings"}}
	for i, r := range runs {
		rr := r.Rate
		if rr == nil {
			rr = &analysis.RateResult{CapacityRPS: analysis.NaN(), CapacityTPS: analysis.NaN(), SLORPS: analysis.NaN(),
				SLOGoodputRPS: analysis.NaN(), TTFTBlowupRPS: analysis.NaN(), MaxTPSRPS: analysis.NaN()}
		}
		capCell := capacityCell(rr)
		slo := floorConc(rr.SLORPS)
		limit := limitName(r.SLO.Limit)
		switch {
		case rr.SLORPS.OK() && r.SLO.Limit == "":
			slo, limit = "≥ "+frate(rr.SLORPS), "none: all valid levels meet it"
		case r.SLO.Limit == "capacity":
			limit = "the capacity"
		case limit == "":
			limit = dash
		}
		blow := frate(rr.TTFTBlowupRPS)
		if rr.TTFTBlowupMethod != "" && rr.TTFTBlowupRPS.OK() {
			blow += " (" + rr.TTFTBlowupMethod.Label() + ")"
		}
		maxTPS := dash
		if r.Throughput.MaxTPS.OK() {
			maxTPS = fmt.Sprintf("%s @ %s", fnum(r.Throughput.MaxTPS), frate(rr.MaxTPSRPS))
		}
		model := r.Meta.Model
		if model == "" {
			model = dash
		}
		t.Rows = append(t.Rows, []string{labels[i], model, capCell, fnum(rr.CapacityTPS), slo, frate(rr.SLOGoodputRPS), limit, blow, maxTPS,
			fmt.Sprint(len(r.Warnings))})
	}
	return t
}

// rateCompareNote explains the columns of rateCompareTable.
const rateCompareNote = "Capacity: the maximum sustainable rate, where the completion rate of the unsustained levels puts it between the last sustained and the first unsustained offered rate, with its 95% interval; “≥ x”: every level sustained its rate. SLO point: largest offered rate meeting every SLO at a sustained level, never above the capacity. Latencies from the scheduled arrival. “—”: not computed."

// capacityCell is the capacity of an arrival-rate run with its bound and 95% interval:
// "20.8 (19.9–20.9)", "≥ 22.0".
func capacityCell(rr *analysis.RateResult) string {
	c := frate(rr.CapacityRPS)
	switch rr.CapacityBound {
	case "at_least":
		c = "≥ " + c
	case "at_most":
		c += " (below every level)"
	}
	if iv := rr.CapacityInterval; iv[0].OK() && iv[1].OK() {
		c += fmt.Sprintf(" (%s–%s)", frate(iv[0]), frate(iv[1]))
	}
	return c
}
