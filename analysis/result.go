package analysis

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/kneecap/kneecap/record"
)

// Schema is the schema name written in analysis.json.
const Schema = "kneecap.analysis/v1"

// Float is a float64 that encodes NaN and ±Inf as JSON null: a value that could not be
// computed is null in analysis.json (with a warning saying why).
type Float float64

// NaN is the "not computed" Float.
func NaN() Float { return Float(math.NaN()) }

// OK reports whether f holds a finite value.
func (f Float) OK() bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// Format formats f as the reports and charts print numbers: no decimals from 100 up, one
// from 10, two below, the decimals chosen by f rounded to three significant digits (99.96 is
// "100", not "100.0"; 9.996 "10.0"); three significant digits from a million up and below
// 0.01 (so a small non-zero value is never "0.00"); "—" when f is not finite. The million
// and 0.01 cutoffs go by f itself, not rounded: 999600 is "999600", not "1e+06".
func (f Float) Format() string {
	v := float64(f)
	a := math.Abs(v)
	r := a
	if f.OK() && a >= 1e-2 && a < 100 {
		r, _ = strconv.ParseFloat(strconv.FormatFloat(a, 'g', 3, 64), 64)
	}
	switch {
	case !f.OK():
		return "—"
	case a >= 1e6 || a != 0 && a < 1e-2:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case r >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case r >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// MarshalJSON encodes f, or null when it is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	if !f.OK() {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

// UnmarshalJSON decodes a number or null (as NaN).
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = NaN()
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Latency summarises a latency distribution in milliseconds. Percentiles use linear
// interpolation between closest ranks (numpy.percentile's default, R type 7).
type Latency struct {
	Mean Float `json:"mean"`
	P50  Float `json:"p50"`
	P90  Float `json:"p90"`
	P95  Float `json:"p95"`
	P99  Float `json:"p99"`
}

// NoLatency is a Latency with every field null.
func NoLatency() Latency { return Latency{NaN(), NaN(), NaN(), NaN(), NaN()} }

// Level is the summary of one level (DESIGN §1): a concurrency level, or an arrival-rate
// level when RateLevel is set.
type Level struct {
	// Concurrency is the target concurrency; on an arrival-rate level, the cap on requests
	// in flight (max_concurrency; 0 = none).
	Concurrency int `json:"concurrency"`
	// RateLevel holds an arrival-rate level's offered and achieved rate, sustainability,
	// schedule lag and latencies from the scheduled arrival; nil on a closed-loop level (its
	// keys are then absent).
	*RateLevel
	// Requests counts requests sent inside the window (the latency population).
	Requests int `json:"requests"`
	// Errors counts failed requests among them.
	Errors int `json:"errors"`
	// ErrorRate is Errors ÷ Requests.
	ErrorRate Float `json:"error_rate"`
	// ErrorClasses counts failures by class.
	ErrorClasses map[string]int `json:"error_classes,omitempty"`
	// UserCancelled is the user cancels among Requests (workload.cancel; cancel.go), not errors;
	// nil (absent) when the run cancels none.
	UserCancelled *UserCancelled `json:"user_cancelled,omitempty"`
	// OutputTPS is output tokens whose chunk arrived inside the window ÷ window length.
	OutputTPS Float `json:"output_tps"`
	// OutputTPSCI95 is the half-width of the 95% confidence interval of OutputTPS.
	OutputTPSCI95 Float `json:"output_tps_ci95"`
	// QPS is successful requests completed inside the window ÷ window length.
	QPS Float `json:"qps"`
	// InputTPS is prompt tokens of requests sent inside the window ÷ window length; on an
	// embeddings level, the input tokens embedded inside the window ÷ its length (the
	// level's throughput, record.TokensInWindow), with the 95% CI half-width InputTPSCI95, and
	// InputsPerS the inputs of the requests completed inside it ÷ its length (both absent on
	// a token stream's level).
	InputTPS     Float `json:"input_tps"`
	InputTPSCI95 Float `json:"input_tps_ci95,omitempty"`
	InputsPerS   Float `json:"inputs_per_s,omitempty"`
	// GoodputQPS is requests completed inside the window meeting every SLO ÷ window length.
	GoodputQPS Float `json:"goodput_qps"`
	// GoodputTPS is the output tokens of those requests ÷ window length.
	GoodputTPS Float `json:"goodput_tps"`
	// AchievedConcurrency is the time-average of requests in flight over the window.
	AchievedConcurrency Float `json:"achieved_concurrency"`
	// LittlesLawError is |QPS × mean(E2E) − achieved| ÷ achieved.
	LittlesLawError Float `json:"littles_law_error"`
	// MeanOutputTokens is the mean N_out of successful requests.
	MeanOutputTokens Float `json:"mean_output_tokens"`
	// WindowS is the measurement window length in seconds.
	WindowS Float `json:"window_s"`
	// Steady is the sweep's steady-state verdict.
	Steady bool `json:"steady"`
	// Imprecise reports a level not steady only for precision (record.LevelRun.Imprecise): no
	// material trend by max_duration, its TPS CI half-width above its target or fewer than
	// min_requests completions. It stays valid, its numbers with the CI they reached
	// (OutputTPSCI95), and the reports flag it (DESIGN §4.1).
	Imprecise bool `json:"imprecise,omitempty"`
	// LatencyRising reports that TTFT rose materially across the window
	// (record.LevelRun.LatencyRising): a queue still growing. An excluded level with it is
	// evidence of overload for the TTFT blow-up and the knee (DESIGN §4.3, §4.4).
	LatencyRising bool `json:"latency_rising,omitempty"`
	// ClientBound reports that the load generator was saturated during the window.
	ClientBound bool `json:"client_bound"`
	// ClientEvidence says what decided ClientBound (record.ClientStats.Evidence): "estimates"
	// (the client-effect estimates, latencies on the kernel's clock), "read_lag" (a run from
	// before them) or "heuristics" (CPU, scheduling latency, run-queue wait); empty without the
	// client's self-check.
	ClientEvidence string `json:"client_evidence,omitempty"`
	// ClientEffect holds the estimates of how much the client's lateness can have moved each
	// number, by name (ttft_p95, itl_p50, offered_load, …), each a fraction of the number
	// (record.ClientStats.Effects, DESIGN §3.3); ClientTolerance the fraction above which one
	// makes the level client-bound. Absent when none was estimated.
	ClientEffect    map[string]float64 `json:"client_effect,omitempty"`
	ClientTolerance float64            `json:"client_tolerance,omitempty"`
	// ReadLag is the client's read lag over the window's content chunks (DESIGN §3.3); nil
	// when none had a kernel receive timestamp.
	ReadLag *ReadLag `json:"read_lag,omitempty"`
	// Valid reports whether the level is used in fits; Notes say why not.
	Valid bool `json:"valid"`
	// TTFT, TPOT, ITL and E2E summarise the latencies, in milliseconds; an embeddings level
	// has no TTFT, TPOT, ITL or TTFA (Level.Whole: their keys are absent).
	TTFT Latency `json:"ttft_ms"`
	// TTFTKernel is TTFT as the kernel saw it (Record.TTFTKernel, DESIGN §3.3): over the
	// requests of the TTFT population whose first content chunk was read with a kernel
	// timestamp; nil (absent) when none was.
	TTFTKernel *KernelTTFT `json:"ttft_kernel_ms,omitempty"`
	// TTFTClient is TTFT on the client's clock (Record.ClientTTFT on a record on the kernel's
	// clock, TTFT on one on the client's) over Level.TTFT's population, for comparison; nil
	// when none of them is on the kernel's clock (TTFT is then the client's).
	TTFTClient *TTFTSummary `json:"ttft_client_ms,omitempty"`
	// Clock says which clock the latencies are on (DESIGN §3.3); nil without records (a
	// level-summary CSV).
	Clock *Clock  `json:"clock,omitempty"`
	TPOT  Latency `json:"tpot_ms"`
	ITL   Latency `json:"itl_ms"`
	E2E   Latency `json:"e2e_ms"`
	// InputTokens and OutputTokens summarise the prompt and output lengths of the successful
	// requests sent in the window as the server counted them (usage), beside the lengths the
	// workload requested.
	InputTokens  TokenLengths `json:"input_tokens"`
	OutputTokens TokenLengths `json:"output_tokens"`
	// FixedOutput reports that every request asked for exactly OutputTokens.Requested tokens
	// (workload.fixed_output: max_tokens with ignore_eos and min_tokens); otherwise max_tokens
	// is a cap the output may stop short of.
	FixedOutput bool `json:"fixed_output,omitempty"`
	// TTFA summarises the time to first answer token in milliseconds (reasoning models: the
	// first non-reasoning content); all null when no request reasoned first.
	TTFA Latency `json:"ttfa_ms"`
	// MeanReasoningTokens is the mean reasoning tokens of successful requests whose usage
	// reports them (null when none does).
	MeanReasoningTokens Float `json:"mean_reasoning_tokens"`
	// UsageDisbelieved counts the requests sent in the window whose usage was not believed
	// (Record.TokensNote); Retried those retried on a fresh connection.
	UsageDisbelieved int `json:"usage_disbelieved,omitempty"`
	Retried          int `json:"retried,omitempty"`
	// Turns summarises a sessions workload's requests by turn index (TTFT as the history
	// grows); absent when the level had no sessions.
	Turns []TurnStats `json:"turns,omitempty"`
	// ByModel summarises the level's requests per model (workload.models), by model name;
	// absent when no request named a model.
	ByModel []ModelStats `json:"by_model,omitempty"`
	// Server summarises server metrics during the window, when scraped.
	Server *ServerEvidence `json:"server,omitempty"`
	// GPU is what the GPUs serving the target drew over the window and the energy per token
	// (DESIGN §4.16); nil (absent) without GPU telemetry.
	GPU *LevelGPU `json:"gpu,omitempty"`
	// PrefixCache is the prefix-cache hit rate of the window, from the server's metrics or
	// the requests' usage; nil (absent) when neither measured it.
	PrefixCache *PrefixCache `json:"prefix_cache,omitempty"`
	// Notes explain validity flags and anything unusual.
	Notes []string `json:"notes,omitempty"`
	// Refine, on a level the sweep added after its planned ones (sweep.refine), says which
	// answer it was added to measure (see Refinement).
	Refine string `json:"refine,omitempty"`
	// Retry, on a level the sweep ran again because an earlier run was excluded
	// (sweep.retry_excluded), says why; Superseded marks that earlier run: it is kept for the
	// record but takes no part in the analysis (DESIGN §3.4).
	Retry      string `json:"retry,omitempty"`
	Superseded bool   `json:"superseded,omitempty"`

	// impreciseWhy is why an imprecise level was not steady (the sweep's reason), for its
	// warning; "" for an imported level.
	impreciseWhy string
	// whole marks an embeddings level (yardstick.go): its answers arrived whole.
	whole bool
}

// TokenLengths summarises token lengths: the mean length requested and the mean, median
// and 95th percentile (R type 7) of the lengths counted. Null where unknown.
type TokenLengths struct {
	Requested Float `json:"requested"`
	Mean      Float `json:"mean"`
	P50       Float `json:"p50"`
	P95       Float `json:"p95"`
}

// NoTokenLengths is a TokenLengths with every field null.
func NoTokenLengths() TokenLengths { return TokenLengths{NaN(), NaN(), NaN(), NaN()} }

// ServerEvidence is the per-level server-metrics summary quoted beside the knee (DESIGN
// §3.7): running and waiting requests, the largest KV-cache usage (a fraction) and the
// preemption counter's increase over the window. A quantity the server does not expose is
// null (NaN), never 0.
type ServerEvidence struct {
	MeanRunning Float `json:"mean_running"`
	MaxRunning  Float `json:"max_running"`
	MeanWaiting Float `json:"mean_waiting"`
	MaxWaiting  Float `json:"max_waiting"`
	MaxKVUsage  Float `json:"max_kv_usage"`
	Preemptions Float `json:"preemptions"`
}

// Meta describes where the data came from; charts and reports print it.
type Meta struct {
	Name     string `json:"name,omitempty"`
	Model    string `json:"model,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	// Date is the run's start, RFC 3339 UTC.
	Date string `json:"date,omitempty"`
	// Source is what was analyzed: a results directory, a CSV file, vLLM bench JSON.
	Source string `json:"source,omitempty"`
	// StopReason is why the sweep stopped, when known.
	StopReason string `json:"stop_reason,omitempty"`
	// LoadGenerators is the number of kneecap processes whose load was merged (`kneecap
	// merge` of a sharded sweep); 0 for one process.
	LoadGenerators int `json:"load_generators,omitempty"`
	// Clocks is a merged rate sweep's line on its shards' clocks (record.ClockSummary): the
	// offsets applied and the largest uncertainty; "" otherwise.
	Clocks string `json:"clocks,omitempty"`
	// Server is what the server under test said it is (engine, version, limits), when it
	// answered an info endpoint before the sweep.
	Server *record.ServerInfo `json:"server_info,omitempty"`
	// Kneecap is the version of kneecap that ran the sweep.
	Kneecap string `json:"kneecap,omitempty"`
	// PromptSizing is how the sweep sized its prompts in the server's tokens (DESIGN §3.6),
	// when recorded.
	PromptSizing *record.PromptSizing `json:"prompt_sizing,omitempty"`
	// GPUIdle is the GPUs' idle reading before the first level (DESIGN §3.10, §4.16): the
	// power above which a level's energy is its load's. Nil without GPU telemetry.
	GPUIdle *record.GPUStats `json:"gpu_idle,omitempty"`
	// GPUs are the GPUs the telemetry counted (the first level's that has GPU figures, else
	// the idle reading's), and GPUMatch the gpu_metrics.match filter that selected them
	// ("Hostname=node-7, gpu=0|1"; "" for every GPU of the source): the report states them
	// (DESIGN §3.10). Absent without GPU telemetry.
	GPUs     []record.GPU `json:"gpus,omitempty"`
	GPUMatch string       `json:"gpu_match,omitempty"`
	// Trace is the trace a trace replay replayed (DESIGN §3.9), when it was one.
	Trace *record.TraceInfo `json:"trace,omitempty"`
	// API is the API the run sent (target.api) when it is not one of the token streams of
	// chat or completions: embeddings (its levels are measured by input tokens/s and
	// latency, DESIGN §4.17).
	API record.API `json:"api,omitempty"`
}

// USL is a fit of the Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)).
type USL struct {
	Sigma  Float `json:"sigma"`
	Kappa  Float `json:"kappa"`
	Lambda Float `json:"lambda"`
	R2     Float `json:"r2"`
	// PeakConcurrency is N* = √((1−σ)/κ); null when κ = 0.
	PeakConcurrency Float `json:"peak_concurrency"`
	// PeakTPS is X(N*).
	PeakTPS Float `json:"peak_tps"`
	// PeakConcurrencyInterval is a 95% bootstrap interval of N*, [low, high].
	PeakConcurrencyInterval [2]Float `json:"peak_concurrency_interval"`
}

// Hinge is a continuous linear-then-flat fit: y = a + b·min(x, breakpoint).
type Hinge struct {
	Breakpoint Float `json:"breakpoint"`
	PlateauTPS Float `json:"plateau_tps"`
	// Slope is b, in tokens/s per unit of concurrency before the breakpoint.
	Slope Float `json:"slope"`
	R2    Float `json:"r2"`
}

// Kneedle is the Kneedle (Satopää et al. 2011) knee of the throughput curve.
type Kneedle struct {
	Knee    Float  `json:"knee"`
	KneeTPS Float  `json:"knee_tps"`
	Shape   string `json:"shape"`
}

// Throughput gathers the throughput models fitted to (concurrency, output TPS).
type Throughput struct {
	MaxTPS            Float    `json:"max_tps"`
	MaxTPSConcurrency int      `json:"max_tps_concurrency"`
	USL               *USL     `json:"usl"`
	Hinge             *Hinge   `json:"hinge"`
	Kneedle           *Kneedle `json:"kneedle"`
	// Batch is the batch-limited Amdahl fit X(N) = m/(α + β·m), m = min(N, S).
	Batch *Batch `json:"batch,omitempty"`
}

// KneeRule names the rule the headline knee was read by (DESIGN §4.3).
type KneeRule string

// The rules of the headline knee.
const (
	// RulePlateauOnset: the best fit is a sharp-knee model (the batch model, or the hinge
	// when it fits clearly better) whose plateau was measured; the knee is its breakpoint,
	// the batch model's slot limit S or the hinge breakpoint.
	RulePlateauOnset KneeRule = "plateau_onset"
	// RuleMarginalGain: the smallest concurrency where one more doubling adds less than
	// knee_gain throughput on the best fit (the efficient point), for a smooth curve (the USL
	// fits best) or a sharp fit whose plateau was not measured.
	RuleMarginalGain KneeRule = "marginal_gain"
)

// Knee is the headline knee: where throughput stops growing. Rule says how it was read:
// the onset of the throughput plateau on a sharp-knee fit (RulePlateauOnset), else the
// marginal-gain point of the best fit (RuleMarginalGain, then equal to the EfficientPoint).
type Knee struct {
	// Concurrency is the knee's concurrency (interpolated; not necessarily a level).
	Concurrency Float `json:"concurrency"`
	// TPS is the fitted output throughput at Concurrency, in tokens/s: the plateau for
	// RulePlateauOnset.
	TPS Float `json:"tps"`
	// Method names the fitted curve the knee was read from (MethodUSL, MethodBatch,
	// MethodHinge).
	Method Method `json:"method"`
	// Interval is a bootstrap 95% interval of Concurrency, [low, high].
	Interval [2]Float `json:"interval"`
	// Rule is the rule the knee was read by; RuleReason says why that rule applies, as the
	// reports print it ("the batch fit (R² 0.9999) fits best and 3 valid levels lie on its
	// plateau").
	Rule       KneeRule `json:"rule"`
	RuleReason string   `json:"rule_reason,omitempty"`
	// Others holds the estimates of the methods, by method: MethodUSL (peak N*), MethodBatch
	// (limit S), MethodHinge (breakpoint), MethodKneedle (knee); Method.EstimateLabel names
	// them.
	Others map[Method]Float `json:"others,omitempty"`
	// Evidence quotes server metrics at the nearest measured level, when scraped.
	Evidence string `json:"evidence,omitempty"`
}

// EfficientPoint is the marginal-gain point: the smallest concurrency where one more
// doubling adds less than Gain throughput on the best fit (DESIGN §4.3). Below the plateau
// onset of a sharp knee it is where adding users starts to pay less than Gain per doubling.
type EfficientPoint struct {
	Concurrency Float `json:"concurrency"`
	// TPS is the fitted output throughput at Concurrency, in tokens/s.
	TPS Float `json:"tps"`
	// Interval is a bootstrap 95% interval of Concurrency, [low, high].
	Interval [2]Float `json:"interval"`
	// Method names the fitted curve it was read from.
	Method Method `json:"method"`
	// Gain is knee_gain, the gain per doubling (0.10 = 10%).
	Gain Float `json:"gain"`
}

// Blowup is where TTFT starts growing linearly with concurrency (queueing).
type Blowup struct {
	Concurrency Float `json:"concurrency"`
	// Method is MethodHinge (the fitted ramp) or method3xBaseline (the fallback).
	Method Method `json:"method"`
	// BaselineMS is the flat TTFT p50 before the blow-up.
	BaselineMS Float `json:"baseline_ms"`
	// SlopeMSPerUser is the TTFT p50 growth per added concurrent request past the blow-up.
	SlopeMSPerUser Float `json:"slope_ms_per_user"`
	// Stat names the TTFT statistic the blow-up was found on when it is not p50: mean, p90
	// or p95, the first the levels report (a published table may lack the median); absent
	// for p50.
	Stat string `json:"ttft_stat,omitempty"`
}

// Statistic is the TTFT statistic the blow-up was found on: Stat, p50 when it names none.
func (b *Blowup) Statistic() string {
	if b.Stat == "" {
		return "p50"
	}
	return b.Stat
}

// Overload reports throughput falling past its peak.
type Overload struct {
	Detected        bool  `json:"detected"`
	FromConcurrency Float `json:"from_concurrency"`
	DropPct         Float `json:"drop_pct"`
}

// OperatingPoint is the level of maximum Kleinrock power (output TPS ÷ mean E2E).
type OperatingPoint struct {
	Concurrency Float `json:"concurrency"`
	TPS         Float `json:"tps"`
	// Power is output TPS ÷ mean E2E in seconds.
	Power Float `json:"power"`
}

// SLOResult is the largest concurrency meeting every SLO.
type SLOResult struct {
	TTFTP95MS Float `json:"ttft_p95_ms"`
	TPOTP95MS Float `json:"tpot_p95_ms"`
	E2EP95MS  Float `json:"e2e_p95_ms"`
	// MaxConcurrency is interpolated on log concurrency; null when even the first level fails.
	MaxConcurrency Float `json:"max_concurrency"`
	// Bracket holds the measured levels MaxConcurrency was interpolated between: the first
	// valid level missing an SLO and the valid level just below it. Absent when every level
	// meets them or the first misses one.
	Bracket []Float `json:"bracket,omitempty"`
	TPS     Float   `json:"tps"`
	// GoodputQPS is the goodput measured at GoodputConcurrency, not interpolated: past the
	// last passing level most requests miss an SLO, and QPS interpolated toward the failing
	// level would claim more goodput than any level measured.
	GoodputQPS Float `json:"goodput_qps"`
	// GoodputConcurrency is the level GoodputQPS was measured at: the last valid level meeting
	// every SLO (0 when GoodputQPS is null).
	GoodputConcurrency int `json:"goodput_concurrency,omitempty"`
	// Limit names the SLO that binds first (ttft_p95, tpot_p95, e2e_p95), or "" when all
	// levels meet every SLO.
	Limit string `json:"limit,omitempty"`
	// Bound says what MaxConcurrency is when it is not interpolated between two valid levels:
	// "at_least" when every valid level meets the SLOs (the limit lies beyond the largest),
	// "between" when an excluded level measured a breach below the first valid level that
	// misses (MaxConcurrency is then the last valid level meeting the SLOs, Bracket that level
	// and the breaching one, Evidence names it: DESIGN §4.7); "" otherwise.
	Bound string `json:"bound,omitempty"`
	// Evidence names the excluded level whose measured breach caps the SLO point, its value
	// and why it is excluded; "" when none does.
	Evidence string `json:"evidence,omitempty"`
	// Checked names the SLOs the levels were checked against (ttft_p95, itl_p99, …): a
	// threshold that is set but reported by no valid level is not among them (a warning says
	// so), and one checked at a higher percentile (CheckedAs) is named by that percentile.
	Checked []string `json:"checked,omitempty"`
	// Objectives lists every SLO set, whatever its percentile (the three *_p95_ms keys above
	// repeat the p95 ones).
	Objectives []SLOObjective `json:"objectives,omitempty"`
}

// SLOObjective is one SLO of a result: Percentile of Metric no larger than MaxMS.
type SLOObjective struct {
	// Name is metric_pNN: ttft_p99.
	Name string `json:"name"`
	// Metric is ttft, tpot, itl or e2e.
	Metric string `json:"metric"`
	// Percentile is 50, 95 or 99.
	Percentile int   `json:"percentile"`
	MaxMS      Float `json:"max_ms"`
	// CheckedAs names the higher percentile the levels were checked at instead (ttft_p99 for
	// ttft_p95) when no valid level reports this one, as vLLM's default files report only p99;
	// "" when checked as set or not at all.
	CheckedAs string `json:"checked_as,omitempty"`
}

// Capacity is the capacity plan: replicas needed for the target load.
type Capacity struct {
	ConcurrentUsers int     `json:"concurrent_users,omitempty"`
	QPS             float64 `json:"qps,omitempty"`
	OutputTPS       float64 `json:"output_tps,omitempty"`
	// ReplicasAtSLO is the replicas needed when each runs at the SLO point.
	ReplicasAtSLO Float `json:"replicas_at_slo"`
	// ReplicasAtKnee is the replicas needed when each runs at the knee (the plateau onset
	// under RulePlateauOnset: full throughput, no request queued for a slot).
	ReplicasAtKnee Float `json:"replicas_at_knee"`
	// ReplicasAtEfficientPoint is the replicas needed when each runs at the efficient point.
	ReplicasAtEfficientPoint Float `json:"replicas_at_efficient_point"`
	GPUs                     Float `json:"gpus"`
	// CostPerHour is replicas at the SLO point × cost per replica-hour.
	CostPerHour Float `json:"cost_per_hour"`
	// CostPerMTokens is $ per 1M output tokens at the SLO point (and at the knee and the
	// efficient point).
	CostPerMTokens                 Float `json:"cost_per_m_output_tokens"`
	CostPerMTokensAtKnee           Float `json:"cost_per_m_output_tokens_at_knee"`
	CostPerMTokensAtEfficientPoint Float `json:"cost_per_m_output_tokens_at_efficient_point"`
	// ReplicasAtCapacity and CostPerMTokensAtCapacity (an arrival-rate run only; absent
	// otherwise) are the replicas needed when each runs at its capacity, the maximum
	// sustainable rate with no headroom, and $ per 1M output tokens there.
	ReplicasAtCapacity       Float `json:"replicas_at_capacity,omitzero"`
	CostPerMTokensAtCapacity Float `json:"cost_per_m_output_tokens_at_capacity,omitzero"`
	// The plan's energy (DESIGN §4.16; absent without GPU telemetry): the GPU power of one
	// replica run at the SLO point (interpolated over the levels' total GPU power) and of the
	// fleet of ReplicasAtSLO replicas, in W and kW; the energy per 1M output tokens there, in
	// kWh; and its cost at Plan.EnergyCostPerKWh in $ (absent without a price).
	PowerPerReplicaW     Float `json:"power_per_replica_w,omitzero"`
	FleetPowerKW         Float `json:"fleet_power_kw,omitzero"`
	KWhPerMOutputTokens  Float `json:"kwh_per_m_output_tokens,omitzero"`
	EnergyCostPerMTokens Float `json:"energy_cost_per_m_output_tokens,omitzero"`
}

// Result is the analysis of a sweep: the content of analysis.json.
type Result struct {
	Schema string `json:"schema"`
	// Mode is record.ModeConcurrency or record.ModeRate ("" in an analysis.json from before the key: closed
	// loop).
	Mode           record.Mode     `json:"mode"`
	Meta           Meta            `json:"meta"`
	Levels         []Level         `json:"levels"`
	Throughput     Throughput      `json:"throughput"`
	Knee           *Knee           `json:"knee"`
	EfficientPoint *EfficientPoint `json:"efficient_point"`
	TTFTBlowup     *Blowup         `json:"ttft_blowup"`
	Overload       Overload        `json:"overload"`
	OperatingPoint *OperatingPoint `json:"operating_point"`
	SLO            SLOResult       `json:"slo"`
	Capacity       *Capacity       `json:"capacity"`
	// ServerLimit is the server's own limit on the requests it runs at once, when it states
	// one or its metrics show one (DESIGN §4.14); nil otherwise.
	ServerLimit *ServerLimit `json:"server_limit,omitempty"`
	// Rate is the answer of an arrival-rate run (DESIGN §4.15); nil for a closed-loop run,
	// whose answer is Knee, TTFTBlowup and SLO.
	Rate *RateResult `json:"rate,omitempty"`
	// Trace is the answer of a trace replay (DESIGN §4.15): the largest time scale of the
	// recorded traffic that meets the SLO; nil when the run did not replay a trace.
	Trace *TraceResult `json:"trace,omitempty"`
	// Energy places energy per output token on the curve (DESIGN §4.16): the energy-optimal
	// load and J/token at the knee, the SLO point and max TPS; nil without GPU telemetry.
	Energy *Energy `json:"energy,omitempty"`
	// Cancels is the run's statement on its user cancels (cancel.go); nil without them.
	Cancels *CancelResult `json:"cancels,omitempty"`
	// NextSteps gives, for each answer the run leaves open or bounds only (its keys: Answer…
	// constants), the next step that would find it: what to run or change (nextsteps.go);
	// absent when every answer was found.
	NextSteps map[string]string `json:"next_steps,omitempty"`
	Warnings  []string          `json:"warnings"`
}

// Plan is a capacity plan's target load and cost: concurrent users, requests/s or output
// tokens/s to serve (0 = not planned), $ per replica-hour and GPUs per replica. It is also
// the plan: section of a configuration file.
type Plan struct {
	ConcurrentUsers    int     `yaml:"concurrent_users"`
	QPS                float64 `yaml:"qps"`
	OutputTPS          float64 `yaml:"output_tps"`
	ReplicaCostPerHour float64 `yaml:"replica_cost_per_hour"`
	GPUsPerReplica     int     `yaml:"gpus_per_replica"`
	// EnergyCostPerKWh is the price of electricity in $ per kWh, for the energy cost of the
	// plan's output tokens (DESIGN §4.16); 0: not priced.
	EnergyCostPerKWh float64 `yaml:"energy_cost_per_kwh"`
}
