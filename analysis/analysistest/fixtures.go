// Package analysistest provides hand-made analysis results for the tests of the packages
// that render them (plots, report): a Saturating sweep that follows the simulator's ground
// truth, and the degenerate shapes every renderer must survive.
package analysistest

import (
	"math"

	"github.com/kneecap/kneecap/analysis"
)

// Hand-made analysis results. The throughput of the "Saturating" fixture follows the
// simulator's ground truth (DESIGN §6): step time t(c) = 4 ms + 0.25 ms × c, TPS(c) = c ÷ t(c)
// up to S = 32 decode slots and flat at S ÷ t(S) = 2667 tok/s beyond; TTFT is flat (~12 ms)
// up to S and grows linearly (queueing) past it.

const (
	stepBaseS   = 0.004
	stepPerSeqS = 0.00025
	slots       = 32
)

// TruthTPS is the simulator ground truth: c ÷ t(c) up to the slots, flat beyond (tokens/s).
func TruthTPS(c float64) float64 {
	n := math.Min(c, slots)
	return n / (stepBaseS + stepPerSeqS*n)
}

func lat(p50 float64) analysis.Latency {
	return analysis.Latency{
		Mean: analysis.Float(p50 * 1.05), P50: analysis.Float(p50), P90: analysis.Float(p50 * 1.3),
		P95: analysis.Float(p50 * 1.4), P99: analysis.Float(p50 * 1.8),
	}
}

// Level builds a plausible level at concurrency c with 512-token prompts and 128 output
// tokens per request (fixed_output), as requested.
func Level(c int) analysis.Level {
	cf := float64(c)
	tps := TruthTPS(cf)
	n := math.Min(cf, slots)
	tpotMS := 1000 * (stepBaseS + stepPerSeqS*n)
	ttftMS := 12.0
	if cf > slots {
		// requests wait (c − S)/S generations of 128 tokens for a slot
		ttftMS += (cf - slots) / slots * 127 * tpotMS
	}
	e2eMS := ttftMS + 127*tpotMS
	qps := tps / 128
	return analysis.Level{
		Concurrency: c, Requests: int(qps * 30), Errors: 0, ErrorRate: 0,
		OutputTPS: analysis.Float(tps), OutputTPSCI95: analysis.Float(tps * 0.03),
		QPS: analysis.Float(qps), InputTPS: analysis.Float(qps * 512),
		GoodputQPS: analysis.Float(qps), GoodputTPS: analysis.Float(tps),
		AchievedConcurrency: analysis.Float(cf * 0.99), LittlesLawError: 0.02,
		MeanOutputTokens: 128, WindowS: 30, Steady: true, Valid: true,
		TTFT: lat(ttftMS), TPOT: lat(tpotMS), ITL: lat(tpotMS * 0.98), E2E: lat(e2eMS),
		TTFA:                analysis.NoLatency(),
		InputTokens:         analysis.TokenLengths{Requested: 512, Mean: 512, P50: 512, P95: 512},
		OutputTokens:        analysis.TokenLengths{Requested: 128, Mean: 128, P50: 128, P95: 128},
		FixedOutput:         true,
		MeanReasoningTokens: analysis.NaN(),
	}
}

// Base is a valid result with one Level per concurrency in cs and no fits.
func Base(cs []int) *analysis.Result {
	r := &analysis.Result{
		Schema: analysis.Schema,
		Meta: analysis.Meta{Name: "llama8b-sim", Model: "meta-llama/Llama-3.1-8B-Instruct",
			Endpoint: "http://127.0.0.1:8000/v1", Date: "2025-03-14T09:26:53Z", Source: "runs/x"},
		Throughput: analysis.Throughput{MaxTPS: analysis.NaN()},
		SLO: analysis.SLOResult{TTFTP95MS: 2000, TPOTP95MS: 50, E2EP95MS: analysis.NaN(),
			MaxConcurrency: analysis.NaN(), TPS: analysis.NaN(), GoodputQPS: analysis.NaN()},
		Overload: analysis.Overload{FromConcurrency: analysis.NaN(), DropPct: analysis.NaN()},
	}
	for _, c := range cs {
		r.Levels = append(r.Levels, Level(c))
	}
	best := -1.0
	for _, l := range r.Levels {
		if l.OutputTPS.OK() && float64(l.OutputTPS) > best {
			best = float64(l.OutputTPS)
			r.Throughput.MaxTPS, r.Throughput.MaxTPSConcurrency = l.OutputTPS, l.Concurrency
		}
	}
	return r
}

// Saturating is an 8-level sweep 1…128 that saturates at 32, with every model fitted, the
// headline knee at the batch model's S (the plateau onset) and the efficient point below it,
// the 128 level invalid (not steady) and two warnings.
func Saturating() *analysis.Result {
	r := Base([]int{1, 2, 4, 8, 16, 32, 64, 128})
	l := &r.Levels[7]
	l.Steady, l.Valid = false, false
	l.Notes = []string{"not steady: slice TPS trend p = 0.01"}
	r.Throughput.USL = &analysis.USL{Sigma: 0.045, Kappa: 0.0004, Lambda: 235, R2: 0.991,
		PeakConcurrency: 48.9, PeakTPS: 2776,
		PeakConcurrencyInterval: [2]analysis.Float{41, 58}}
	r.Throughput.Hinge = &analysis.Hinge{Breakpoint: 30, PlateauTPS: 2660, Slope: 88, R2: 0.98}
	r.Throughput.Batch = &analysis.Batch{Alpha: 0.004, Beta: 0.00025, Limit: 32.6, PlateauTPS: 2683, R2: 0.995}
	r.Throughput.Kneedle = &analysis.Kneedle{Knee: 16, KneeTPS: 2286, Shape: "concave_increasing"}
	// The batch model fits best and one valid level (64) lies past its S: the knee is S, the
	// plateau onset; the efficient point is where X(2N) = 1.1·X(N) on that curve, 25.0.
	r.Knee = &analysis.Knee{Concurrency: 32.6, TPS: 2683, Method: analysis.MethodBatch,
		Interval: [2]analysis.Float{31.8, 33.5}, Rule: analysis.RulePlateauOnset,
		RuleReason: "the batch model fits best (R² 0.9950; USL 0.9910, hinge 0.9800), a sharp knee, with 5 valid levels below its slot limit S and 1 on the plateau beyond: the knee is the onset of that plateau",
		Others:     map[analysis.Method]analysis.Float{analysis.MethodBatch: 32.6, analysis.MethodHinge: 30, analysis.MethodKneedle: 16}}
	r.EfficientPoint = &analysis.EfficientPoint{Concurrency: 25.0, TPS: 2439, Interval: [2]analysis.Float{24.3, 25.8},
		Method: analysis.MethodBatch, Gain: 0.10}
	r.TTFTBlowup = &analysis.Blowup{Concurrency: 33.1, Method: analysis.MethodHinge, BaselineMS: 12, SlopeMSPerUser: 47.6}
	r.OperatingPoint = &analysis.OperatingPoint{Concurrency: 32, TPS: 2667, Power: 1711}
	r.SLO.MaxConcurrency, r.SLO.TPS, r.SLO.GoodputQPS, r.SLO.Limit = 45.3, 2667, 20.8, "ttft_p95"
	r.SLO.GoodputConcurrency = 32 // level 32 measured the goodput: 2667 / 128
	r.Capacity = &analysis.Capacity{ConcurrentUsers: 1000, ReplicasAtSLO: 23, ReplicasAtKnee: 31, ReplicasAtEfficientPoint: 40,
		GPUs: 23, CostPerHour: 92, CostPerMTokens: 9.58, CostPerMTokensAtKnee: 9.52, CostPerMTokensAtEfficientPoint: 10.5}
	r.Warnings = []string{
		"level 128 is not steady (slice TPS trend p = 0.01); excluded from fits",
		"knee methods disagree: Kneedle at concurrency 16 vs the headline knee at 32.6 (batch, plateau onset), more than a factor 2 apart",
	}
	return r
}

// WithServer is Saturating with server metrics per level, as a scrape of the simulator would
// give them (DESIGN §6): min(c, 32) requests running and c − 32 waiting past the 32 slots, KV
// usage 640 tokens (512 in + 128 out) per running request of a 32 × 640-token cache, so full
// from 32; 12 preemptions at the invalid level 128; and no scrape inside the window of level 2
// (nil Server). The other fixtures have no server metrics.
func WithServer() *analysis.Result {
	r := Saturating()
	for i := range r.Levels {
		l := &r.Levels[i]
		if l.Concurrency == 2 {
			continue
		}
		c := float64(l.Concurrency)
		running := math.Min(c, slots)
		l.Server = &analysis.ServerEvidence{MeanRunning: analysis.Float(running), MaxRunning: analysis.Float(running),
			MeanWaiting: analysis.Float(c - running), MaxWaiting: analysis.Float(c - running),
			MaxKVUsage: analysis.Float(running / slots), Preemptions: 0}
		if l.Concurrency == 128 {
			l.Server.Preemptions = 12
		}
	}
	// The running count is capped at the 32 slots while requests wait at 64 and 128.
	r.ServerLimit = &analysis.ServerLimit{Slots: slots, Stated: analysis.NaN(), Observed: slots,
		CappedAt: []int{64, 128}, MaxWaiting: 96}
	return r
}

// OneLevel has a single level: nothing can be fitted.
func OneLevel() *analysis.Result {
	r := Base([]int{8})
	r.Warnings = []string{"too few levels (1) to fit a throughput model"}
	r.NextSteps = map[string]string{analysis.AnswerKnee: "sweep more levels (at least 3, e.g. --levels 1,2,4,8,16,32)",
		analysis.AnswerTTFTBlowup: "sweep more levels (at least 3, e.g. --levels 1,2,4,8,16,32)", analysis.AnswerSLO: "extend the sweep past 8 (add 16 and 32 to --levels)"}
	return r
}

// TwoLevels has two levels: too few to fit.
func TwoLevels() *analysis.Result {
	r := Base([]int{1, 2})
	r.Warnings = []string{"too few levels (2) to fit a throughput model"}
	r.NextSteps = map[string]string{analysis.AnswerKnee: "sweep more levels (at least 3, e.g. --levels 1,2,4,8,16,32)",
		analysis.AnswerTTFTBlowup: "sweep more levels (at least 3, e.g. --levels 1,2,4,8,16,32)", analysis.AnswerSLO: "extend the sweep past 2 (add 4 and 8 to --levels)"}
	return r
}

// TwentyLevels is a linear plan 8, 16, …, 160.
func TwentyLevels() *analysis.Result {
	var cs []int
	for c := 8; c <= 160; c += 8 {
		cs = append(cs, c)
	}
	r := Base(cs)
	r.Knee = &analysis.Knee{Concurrency: 24, TPS: 2550, Method: analysis.MethodHinge, Interval: [2]analysis.Float{analysis.NaN(), analysis.NaN()},
		Rule: analysis.RulePlateauOnset}
	r.SLO.MaxConcurrency, r.SLO.Limit = 48, "ttft_p95"
	return r
}

// AllInvalid has levels that are all invalid, one with null throughput and latencies.
func AllInvalid() *analysis.Result {
	r := Base([]int{1, 2, 4})
	for i := range r.Levels {
		r.Levels[i].Valid = false
		r.Levels[i].Notes = []string{"achieved concurrency below 95% of target"}
	}
	r.Levels[2].OutputTPS, r.Levels[2].OutputTPSCI95 = analysis.NaN(), analysis.NaN()
	r.Levels[2].TTFT, r.Levels[2].TPOT, r.Levels[2].ITL, r.Levels[2].E2E = analysis.NoLatency(), analysis.NoLatency(), analysis.NoLatency(), analysis.NoLatency()
	r.Warnings = []string{"no valid level: nothing fitted"}
	r.NextSteps = map[string]string{}
	for _, a := range []string{analysis.AnswerMaxTPS, analysis.AnswerKnee, analysis.AnswerTTFTBlowup, analysis.AnswerSLO} {
		r.NextSteps[a] = "the client kept fewer requests in flight than asked: see the levels' notes"
	}
	return r
}

// NoData has levels without a single finite number.
func NoData() *analysis.Result {
	r := Base(nil)
	r.Levels = []analysis.Level{{Concurrency: 4, OutputTPS: analysis.NaN(), OutputTPSCI95: analysis.NaN(), QPS: analysis.NaN(),
		GoodputQPS: analysis.NaN(), ErrorRate: 1, Requests: 10, Errors: 10,
		TTFT: analysis.NoLatency(), TPOT: analysis.NoLatency(), ITL: analysis.NoLatency(), E2E: analysis.NoLatency()}}
	r.Warnings = []string{"every request failed at concurrency 4 (connect)"}
	r.NextSteps = map[string]string{}
	for _, a := range []string{analysis.AnswerMaxTPS, analysis.AnswerKnee, analysis.AnswerTTFTBlowup, analysis.AnswerSLO} {
		r.NextSteps[a] = "no request succeeded: check the server (error_classes)"
	}
	return r
}

// ErrorsHeavy has a high error rate from 16 on, null latencies at 64, and no fits.
func ErrorsHeavy() *analysis.Result {
	r := Base([]int{1, 4, 16, 64})
	for i := 2; i < 4; i++ {
		l := &r.Levels[i]
		l.Errors = l.Requests / 3
		l.ErrorRate = analysis.Float(float64(l.Errors) / float64(l.Requests))
		l.ErrorClasses = map[string]int{"http_429": l.Errors - 2, "stream_broken": 2}
		l.Valid = false
		l.Notes = []string{"error rate above 5%"}
	}
	r.Levels[3].TTFT, r.Levels[3].TPOT, r.Levels[3].E2E = analysis.NoLatency(), analysis.NoLatency(), analysis.NoLatency()
	r.Levels[3].InputTokens, r.Levels[3].OutputTokens = analysis.NoTokenLengths(), analysis.NoTokenLengths()
	r.Warnings = []string{"error rate 33% at concurrency 16 (http_429)", "error rate 33% at concurrency 64 (http_429)", "no knee: too few valid levels"}
	r.NextSteps = map[string]string{analysis.AnswerKnee: "lower the concurrency, or see error_classes for what the server refused",
		analysis.AnswerTTFTBlowup: "lower the concurrency, or see error_classes for what the server refused", analysis.AnswerSLO: "see why the levels were excluded (the warnings above)"}
	return r
}

// HugeRange spans concurrency 1…4096 and TTFT from 1 ms to 10⁶ ms.
func HugeRange() *analysis.Result {
	var cs []int
	for c := 1; c <= 4096; c *= 2 {
		cs = append(cs, c)
	}
	r := Base(cs)
	for i := range r.Levels {
		r.Levels[i].TTFT = lat(math.Pow(10, float64(i)/2))
	}
	return r
}

// Fixture is a named result constructor.
type Fixture struct {
	Name   string
	Result func() *analysis.Result
}

// Fixtures returns every fixture, including a nil result (a new slice each call, so no test
// can change another's list).
func Fixtures() []Fixture {
	return []Fixture{
		{"Saturating", Saturating}, {"one_level", OneLevel}, {"two_levels", TwoLevels},
		{"twenty_levels", TwentyLevels}, {"all_invalid", AllInvalid}, {"no_data", NoData},
		{"errors_heavy", ErrorsHeavy}, {"huge_range", HugeRange}, {"with_server", WithServer},
		{"nil", func() *analysis.Result { return nil }},
	}
}
