package analysistest

import (
	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// The arrival-rate fixture: an open-loop sweep of the demo engine (32 slots, steps of 4 ms +
// 250 µs per sequence; DESIGN §6) with 128-token requests, whose capacity is X(S) ÷ N_out =
// 2666.7 ÷ 128 = 20.83 requests/s. Its numbers are those of the discrete-step model of the
// engine in analysis's tests (Poisson arrivals, seed 11, 5 s warmup, 20 s windows, 40 µs of
// client lag), rounded, analyzed under TTFT p95 ≤ 500 ms and TPOT p95 ≤ 50 ms with a plan of
// 200 requests/s at $4 per replica-hour.

// rateRow is one level of the fixture: offered and achieved rate, completion rate, output TPS
// and its CI, backlog growth, TTFT (mean, p50, p95, p99) from the send time and from the
// scheduled arrival, E2E likewise, TPOT p50 and p95, requests, goodput, achieved concurrency
// and Little's-law error.
type rateRow struct {
	x, ach, qps, tps, ci, growth float64
	sustainable                  bool
	ttft, ttftSched, e2e, e2eSch [4]float64
	tpot                         [2]float64
	requests                     int
	good, ac, little             float64
}

var rateRows = []rateRow{
	{4, 3.55, 3.6, 455.7, 108, -0.04, true, [4]float64{6.8, 6.6, 10.1, 10.7}, [4]float64{6.84, 6.64, 10.2, 10.7}, [4]float64{618.6, 614.3, 677.8, 701.1}, [4]float64{618.7, 614.3, 677.9, 701.1}, [2]float64{4.8, 5.27}, 71, 3.6, 2.2, 0.012},
	{8, 8.15, 7.85, 1031, 179, -0.02, true, [4]float64{8.61, 8.48, 11.8, 13.8}, [4]float64{8.65, 8.52, 11.9, 13.9}, [4]float64{734.4, 727.8, 916.4, 929.3}, [4]float64{734.5, 727.9, 916.4, 929.3}, [2]float64{5.65, 7.14}, 163, 7.85, 5.92, 0.026},
	{12, 12.5, 11.75, 1542, 210, 0.18, true, [4]float64{10.4, 10.1, 15.5, 17.2}, [4]float64{10.5, 10.1, 15.5, 17.3}, [4]float64{901.7, 892.3, 1119, 1160}, [4]float64{901.7, 892.3, 1119, 1160}, [2]float64{6.94, 8.71}, 250, 11.75, 10.8, 0.018},
	{16, 15.7, 15.2, 1990, 179, -0.17, true, [4]float64{12.2, 11.6, 17.6, 21.3}, [4]float64{12.2, 11.7, 17.7, 21.3}, [4]float64{1071, 1054, 1396, 1430}, [4]float64{1071, 1054, 1396, 1430}, [2]float64{8.2, 10.9}, 314, 15.2, 16.6, 0.022},
	{18, 16.9, 17.1, 2166, 208, 0.39, true, [4]float64{18.5, 13.8, 35.5, 154}, [4]float64{18.6, 13.8, 35.6, 154}, [4]float64{1180, 1139, 1520, 1549}, [4]float64{1180, 1139, 1520, 1549}, [2]float64{8.82, 11.5}, 337, 17.1, 20.1, 0.006},
	{20, 19.3, 18.8, 2451, 206, -0.27, true, [4]float64{57.1, 17, 288, 368}, [4]float64{57.1, 17.1, 288, 368}, [4]float64{1412, 1438, 1745, 1824}, [4]float64{1412, 1438, 1745, 1824}, [2]float64{11.2, 11.9}, 386, 18.8, 27.1, 0.019},
	{22, 20.9, 20.05, 2607, 96.5, 1.1, true, [4]float64{501, 557, 998, 1110}, [4]float64{501, 557, 998, 1110}, [4]float64{1975, 2081, 2522, 2632}, [4]float64{1975, 2081, 2522, 2632}, [2]float64{12, 12}, 419, 8.05, 40.4, 0.020},
	{26, 24.6, 20.9, 2667, 5.53, 3.02, false, [4]float64{2150, 2160, 3540, 3670}, [4]float64{2150, 2160, 3540, 3670}, [4]float64{3659, 3685, 5001, 5079}, [4]float64{3659, 3685, 5001, 5079}, [2]float64{12, 12}, 492, 3.4, 77.3, 0.011},
	{32, 33.1, 20.85, 2667, 5.53, 13.5, false, [4]float64{8250, 8250, 13700, 14200}, [4]float64{8250, 8250, 13700, 14200}, [4]float64{9762, 9775, 15250, 15510}, [4]float64{9762, 9775, 15250, 15510}, [2]float64{12, 12}, 663, 0, 203, 0.002},
}

// latency4 is a Latency of mean, p50, p95 and p99 (p90 between p50 and p95).
func latency4(v [4]float64) analysis.Latency {
	return analysis.Latency{Mean: analysis.Float(v[0]), P50: analysis.Float(v[1]), P90: analysis.Float((v[1] + 2*v[2]) / 3),
		P95: analysis.Float(v[2]), P99: analysis.Float(v[3])}
}

// RateLevel builds the fixture's level for row: 512-token prompts and 128-token outputs
// (fixed_output), no in-flight cap, the lag 40 µs for every request.
func (row rateRow) level() analysis.Level {
	f := func(v float64) analysis.Float { return analysis.Float(v) }
	l := analysis.Level{
		RateLevel: analysis.NewRateLevel(row.x), Requests: row.requests, ErrorRate: 0,
		OutputTPS: f(row.tps), OutputTPSCI95: f(row.ci), QPS: f(row.qps), InputTPS: f(row.ach * 512),
		GoodputQPS: f(row.good), GoodputTPS: f(row.good * 128), AchievedConcurrency: f(row.ac), LittlesLawError: f(row.little),
		MeanOutputTokens: 128, WindowS: 20, Steady: true, Valid: true,
		TTFT: latency4(row.ttft), E2E: latency4(row.e2e),
		TPOT:         analysis.Latency{Mean: f(row.tpot[0]), P50: f(row.tpot[0]), P90: f((row.tpot[0] + 2*row.tpot[1]) / 3), P95: f(row.tpot[1]), P99: f(row.tpot[1] * 1.05)},
		ITL:          analysis.Latency{Mean: f(row.tpot[0]), P50: f(row.tpot[0]), P90: f(row.tpot[1]), P95: f(row.tpot[1]), P99: f(row.tpot[1] * 1.1)},
		TTFA:         analysis.NoLatency(),
		InputTokens:  analysis.TokenLengths{Requested: 512, Mean: 512, P50: 512, P95: 512},
		OutputTokens: analysis.TokenLengths{Requested: 128, Mean: 128, P50: 128, P95: 128}, FixedOutput: true,
		MeanReasoningTokens: analysis.NaN(),
	}
	rl := l.RateLevel
	rl.AchievedRPS, rl.Sustainable, rl.BacklogGrowthRPS = f(row.ach), row.sustainable, f(row.growth)
	rl.ScheduleLag = analysis.Latency{Mean: 0.04, P50: 0.04, P90: 0.04, P95: 0.04, P99: 0.04}
	rl.TTFTScheduled, rl.E2EScheduled = latency4(row.ttftSched), latency4(row.e2eSch)
	if !row.sustainable {
		l.Notes = []string{"unsustainable: the backlog grew " + analysis.Float(row.growth).Format() + " requests/s over the window while fewer requests ended than arrived; kept as a point above capacity"}
	}
	return l
}

// Rate is the arrival-rate fixture: nine levels from 4 to 32 requests/s, the two past 22
// unsustainable, analyzed as analysis.Analyze does (rounded): capacity 20.84 requests/s
// (95% interval 19.9–20.9) between the sustained 22 and the unsustained 26, TTFT blow-up at
// 21.1, SLO point 20.6 with TTFT p95 binding, 10 replicas for 200 requests/s.
func Rate() *analysis.Result {
	r := &analysis.Result{
		Schema: analysis.Schema, Mode: record.ModeRate,
		Meta: analysis.Meta{Name: "demo-rate", Model: "kneecap-sim", Endpoint: "http://127.0.0.1:8000/v1",
			Date: "2026-03-14T09:26:53Z", Source: "runs/rate", StopReason: "2 levels not sustained"},
		Throughput: analysis.Throughput{MaxTPS: 2667},
		Overload:   analysis.Overload{FromConcurrency: analysis.NaN(), DropPct: analysis.NaN()},
		SLO: analysis.SLOResult{TTFTP95MS: 500, TPOTP95MS: 50, E2EP95MS: analysis.NaN(), MaxConcurrency: analysis.NaN(),
			TPS: analysis.NaN(), GoodputQPS: analysis.NaN(), Limit: "ttft_p95", Checked: []string{"ttft_p95", "tpot_p95"}},
		Rate: &analysis.RateResult{LatencyFrom: "scheduled", CapacityRPS: 20.84, CapacityInterval: [2]analysis.Float{19.88, 20.93},
			CapacityTPS: 2667, CapacityBracket: []analysis.Float{22, 26},
			CapacityReason: "the mean completion rate of the 2 unsustainable level(s), 20.8 requests/s, below the 22.0 requests/s arriving at the last level the backlog test called sustained, which completed 20.4/s; the next, 26.0 requests/s, was not sustained; 95% interval by a residual bootstrap (500 resamples, Pearson residuals) of the completion rates around min(arrival rate, capacity), at least ± the unsustainable levels' own 95% CI",
			TTFTBlowupRPS:  21.14, TTFTBlowupMethod: analysis.MethodHinge, TTFTBlowupStat: "p50", TTFTBlowupBaselineMS: 9.81, TTFTBlowupSlope: 578,
			SLORPS: 20.6, SLOBracket: []analysis.Float{20, 22}, SLOTPS: 2498, SLOGoodputRPS: 20.6, MaxTPSRPS: 26},
		Capacity: &analysis.Capacity{QPS: 200, ReplicasAtSLO: 10, ReplicasAtKnee: analysis.NaN(), ReplicasAtEfficientPoint: analysis.NaN(),
			GPUs: 10, CostPerHour: 40, CostPerMTokens: 0.445, CostPerMTokensAtKnee: analysis.NaN(), CostPerMTokensAtEfficientPoint: analysis.NaN(),
			ReplicasAtCapacity: 10, CostPerMTokensAtCapacity: 0.417},
		Warnings: []string{},
	}
	for _, row := range rateRows {
		r.Levels = append(r.Levels, row.level())
	}
	return r
}

// RateBeyond is Rate cut to its seven sustained levels: the capacity is at least 22
// requests/s, a lower bound, and every level meets the SLOs but 22.
func RateBeyond() *analysis.Result {
	r := Rate()
	r.Levels = r.Levels[:7]
	rr := r.Rate
	rr.CapacityRPS, rr.CapacityBound, rr.CapacityBracket, rr.CapacityTPS = 22, "at_least", nil, 2607
	rr.CapacityInterval = [2]analysis.Float{22, analysis.NaN()}
	rr.CapacityReason = "every valid level sustained its offered rate: the capacity is at least the largest, 22.0 requests/s"
	rr.MaxTPSRPS = 22
	r.Throughput.MaxTPS = 2607
	r.Capacity.ReplicasAtCapacity, r.Capacity.CostPerMTokensAtCapacity = 10, 0.426
	r.Warnings = []string{"capacity: every valid level sustained its offered rate: the capacity lies beyond 22.0 requests/s (a lower bound); extend the sweep to higher rates"}
	r.NextSteps = map[string]string{analysis.AnswerCapacity: "extend the sweep to higher rates (add 44.0 and 88.0 to --rates)",
		analysis.AnswerSLO: "extend the sweep to higher rates (add 44.0 and 88.0 to --rates)"}
	return r
}

// RateOverloaded is Rate cut to its two unsustained levels: the capacity is at most 26
// requests/s (the completion rate 20.9), and no level meets the SLOs.
func RateOverloaded() *analysis.Result {
	r := Rate()
	r.Levels = r.Levels[7:]
	rr := r.Rate
	rr.CapacityBound, rr.CapacityBracket = "at_most", nil
	rr.CapacityInterval = [2]analysis.Float{analysis.NaN(), 26}
	rr.SLORPS, rr.SLOTPS, rr.SLOGoodputRPS, rr.SLOBracket = analysis.NaN(), analysis.NaN(), analysis.NaN(), nil
	rr.TTFTBlowupRPS, rr.TTFTBlowupMethod, rr.TTFTBlowupBaselineMS, rr.TTFTBlowupSlope = analysis.NaN(), "", analysis.NaN(), analysis.NaN()
	r.Capacity.ReplicasAtSLO, r.Capacity.GPUs, r.Capacity.CostPerHour, r.Capacity.CostPerMTokens = analysis.NaN(), analysis.NaN(), analysis.NaN(), analysis.NaN()
	r.Warnings = []string{"capacity: even the first valid level (26.0 requests/s) was not sustained: the capacity is below it (at most; the unsustainable levels completed 20.9 requests/s); measure lower rates",
		"slo: even the first valid level (26.0 requests/s) misses ttft_p95: no SLO point"}
	r.NextSteps = map[string]string{analysis.AnswerCapacity: "measure lower rates (add 6.50 and 13.0 to --rates)",
		analysis.AnswerSLO: "measure lower rates (add 6.50 and 13.0 to --rates)", analysis.AnswerTTFTBlowup: "extend the sweep to higher rates (add 64.0 and 128 to --rates)",
		analysis.AnswerReplicas: "measure lower rates (add 6.50 and 13.0 to --rates)"}
	return r
}

// RateNoData is an arrival-rate result whose two levels measured nothing (every value null,
// both invalid) and that has no answer.
func RateNoData() *analysis.Result {
	r := Rate()
	for i := range r.Levels[:2] {
		l := analysis.Level{RateLevel: analysis.NewRateLevel(float64(4 * (i + 1))), ErrorRate: analysis.NaN(), OutputTPS: analysis.NaN(),
			OutputTPSCI95: analysis.NaN(), QPS: analysis.NaN(), InputTPS: analysis.NaN(), GoodputQPS: analysis.NaN(), GoodputTPS: analysis.NaN(),
			AchievedConcurrency: analysis.NaN(), LittlesLawError: analysis.NaN(), MeanOutputTokens: analysis.NaN(), WindowS: analysis.NaN(),
			TTFT: analysis.NoLatency(), TPOT: analysis.NoLatency(), ITL: analysis.NoLatency(), E2E: analysis.NoLatency(), TTFA: analysis.NoLatency(),
			InputTokens: analysis.NoTokenLengths(), OutputTokens: analysis.NoTokenLengths(), MeanReasoningTokens: analysis.NaN(),
			Notes: []string{"invalid: empty measurement window [0, 0)"}}
		r.Levels[i] = l
	}
	r.Levels = r.Levels[:2]
	n := analysis.NaN()
	r.Throughput.MaxTPS = n
	r.Rate = &analysis.RateResult{LatencyFrom: "scheduled", CapacityRPS: n, CapacityInterval: [2]analysis.Float{n, n}, CapacityTPS: n,
		TTFTBlowupRPS: n, TTFTBlowupBaselineMS: n, TTFTBlowupSlope: n, SLORPS: n, SLOTPS: n, SLOGoodputRPS: n, MaxTPSRPS: n}
	r.Capacity = nil
	r.SLO.Limit = ""
	r.Warnings = []string{"no valid levels: nothing to analyze"}
	r.NextSteps = map[string]string{}
	for _, a := range []string{analysis.AnswerMaxTPS, analysis.AnswerCapacity, analysis.AnswerTTFTBlowup, analysis.AnswerSLO} {
		r.NextSteps[a] = "see why each level was excluded (its notes)"
	}
	return r
}

// RateFixtures returns every arrival-rate fixture (a new slice each call).
func RateFixtures() []Fixture {
	return []Fixture{{"rate", Rate}, {"rate_beyond", RateBeyond}, {"rate_overloaded", RateOverloaded}, {"rate_no_data", RateNoData}}
}
