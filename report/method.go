package report

import "github.com/kneecap/kneecap/analysis"

// ttfaNote defines TTFA; the method table lists it when some request reasoned first.
var ttfaNote = [2]string{"TTFA", "t(first chunk with non-empty answer content, not reasoning) − t_send, for requests that reasoned first (TTFT otherwise)"}

// methodNotes are the metric definitions and model formulas of DESIGN §1 and §4, as
// (name, formula) pairs, printed beside the numbers.
var methodNotes = [][2]string{
	{"TTFT", "t(first chunk with non-empty content or reasoning_content) − t_send; a role-only chunk does not count"},
	{"E2E", "t(last content chunk) − t_send"},
	{"N_out", "usage.completion_tokens of the final usage chunk, else the number of content chunks"},
	{"TPOT", "(E2E − TTFT) ÷ (N_out − 1), per request; undefined for N_out ≤ 1"},
	{"ITL", "every gap between consecutive content chunks, pooled over requests; a chunk of k tokens contributes gap ÷ k, k times"},
	{"output TPS", "output tokens whose chunk arrived inside the window [W0, W1) ÷ (W1 − W0)"},
	{"QPS", "successful requests completed inside the window ÷ (W1 − W0)"},
	{"goodput", "requests completed inside the window meeting every SLO ÷ (W1 − W0)"},
	{"achieved concurrency", "time-average of requests in flight over the window; flagged below 95% of target"},
	{"Little's law", "L = λ·W: error = |QPS × mean(E2E) − achieved concurrency| ÷ achieved concurrency; flagged above 10%"},
	{"percentiles", "linear interpolation between closest ranks (numpy.percentile default, R type 7)"},
	{analysis.MethodUSL.Label(), "X(N) = λN ÷ (1 + σ(N − 1) + κN(N − 1)), σ, κ ≥ 0, nonlinear least squares; peak N* = √((1 − σ) ÷ κ)"},
	{analysis.MethodBatch.Label(), "X(N) = m ÷ (α + β·m), m = min(N, S): S decode slots whose step takes α + β·m per token; least squares, closed form in 1 ÷ α over a grid of β ÷ α and S, refined by Nelder–Mead"},
	{analysis.MethodHinge.Label(), "y = a + b·min(N, breakpoint): linear then flat, breakpoint searched continuously"},
	{analysis.MethodKneedle.Label(), "Satopää et al. 2011 (as the kneed package), on log2(concurrency) for geometric levels"},
	{"knee rule", "plateau onset: the breakpoint (batch slot limit S, or hinge breakpoint) of the best fit when that is a sharp-knee model (the hinge only with under ¼ of the batch model's 1 − R²) with R² ≥ 0.95, ≥ 2 valid levels more than 5% below the breakpoint and ≥ 1 more than 5% above it; otherwise (the USL fits best, or the rise or plateau was not measured) marginal gain, the efficient point; bootstrap 95% interval"},
	{"efficient point", "smallest N where doubling concurrency adds less than knee_gain (default 10%) throughput on the best fit; bootstrap 95% interval"},
	{"TTFT blow-up", "flat-then-linear hinge on (concurrency, TTFT p50), least squares weighted by TTFT^−1.5 (unweighted if that is no ramp); fallback: first level with TTFT p50 > 3 × baseline"},
	{"operating point", "maximum of Kleinrock's power, output TPS ÷ mean E2E"},
	{"SLO point", "largest concurrency (interpolated on log concurrency) meeting every SLO"},
}

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
