package analysis

import (
	"time"

	"github.com/kneecap/kneecap/record"
)

// Options configures Analyze.
type Options struct {
	// KneeGain is the throughput gain per doubling below which the efficient point is reached
	// (0.10); the knee too under RuleMarginalGain.
	KneeGain float64
	// SLO holds the objectives (defaults TTFT p95 ≤ 2 s, TPOT p95 ≤ 50 ms).
	SLO SLO
	// Plan is the capacity plan; the zero value computes none.
	Plan Plan
	// MaxErrorRate is the error rate above which a level is invalid (0.05).
	MaxErrorRate float64
	// Bootstrap is the number of bootstrap resamples for intervals (0 disables them).
	Bootstrap int
	// Seed seeds the bootstrap, so results are deterministic.
	Seed uint64
	// Stop, when closed (an interrupt), ends Summarize before its next level (it returns nil)
	// and Analyze before its next step, fit or bootstrap resample: the caller discards the
	// result. nil never stops.
	Stop <-chan struct{}
	// Lengths is what the workload asked for, for Summarize: whether outputs were of fixed
	// length, and the lengths of records that do not carry theirs.
	Lengths RequestedLengths
	// Think is the mean pause of a closed-loop worker between two requests (workload.think_time;
	// with sessions the mean over turn and conversation pauses, workload.WorkloadConfig.MeanThink):
	// a level of target c then keeps c × E2E ÷ (E2E + Think) requests in flight, the achieved
	// concurrency the validity rule expects (§4.1). 0: c.
	Think time.Duration
	// API is the API the run sent (target.api; empty: chat): it picks what the levels are
	// measured by (yardstickOf).
	API record.API
}

// RequestedLengths describes the lengths a sweep's workload asked for (config.AnalysisOptions
// fills it from the workload: section). The zero value knows nothing.
type RequestedLengths struct {
	// FixedOutput reports workload.fixed_output: every request asked for exactly its
	// max_tokens (Level.FixedOutput).
	FixedOutput bool
	// InputTokens and OutputTokens are the mean prompt and output lengths the workload
	// requested, in tokens, used for records that do not say what they requested (records.jsonl
	// before requested_prompt_tokens); 0 when unknown (a dataset).
	InputTokens, OutputTokens float64
}

// DefaultOptions returns the defaults of DESIGN §4.
func DefaultOptions() Options {
	return Options{
		KneeGain:     0.10,
		SLO:          SLO{TTFTP95: 2 * time.Second, TPOTP95: 50 * time.Millisecond},
		MaxErrorRate: 0.05,
		Bootstrap:    500,
		Seed:         1,
	}
}
