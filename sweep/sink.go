package sweep

import (
	"context"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// Sink receives the results of a sweep as it runs. The results directory (Dir) is one.
type Sink interface {
	// LevelDone is called once per finished level, in order, with every record of the level
	// (warmup, measure and drain). It must make the level durable before it returns.
	LevelDone(l record.Level) error
	// Finish is called once when the sweep ends, with the reason it stopped.
	Finish(reason string) error
}

// Stop reasons recorded in levels.json.
const (
	StopDone        = "completed all levels"
	StopInterrupted = "interrupted"
)

// Observer receives a sweep's progress. Calls come from the controller goroutine, one at a
// time; implementations must return quickly.
type Observer interface {
	// LevelStarted is called when a level's workers start.
	LevelStarted(index, concurrency int)
	// Live is called about every 500 ms with the running level's live numbers.
	Live(s LiveStats)
	// LevelFinished is called after a level has drained and its records reached the Sink.
	LevelFinished(l record.Level)
}

// LiveStats are the running level's live numbers, for progress display only.
type LiveStats struct {
	Index       int
	Concurrency int
	// OfferedRPS is a rate level's offered rate, requests/s (0 on a closed loop).
	OfferedRPS float64
	// Phase is the phase the level is in.
	Phase record.Phase
	// Elapsed is the time since the level started.
	Elapsed time.Duration
	// Completed counts requests completed in the measurement window so far.
	Completed int
	// InFlight is the number of requests in flight.
	InFlight int
	// OutputTPS is the output tokens/s of the requests completed in the measurement window
	// so far, counted as they complete (0 during warmup and before the second completion:
	// one request's tokens say nothing of the rate).
	OutputTPS float64
	// TTFTP50 is the median TTFT of requests completed in the window so far, on a rate level
	// from their scheduled arrival (as the rate table's TTFT), else from the send.
	TTFTP50 time.Duration
}

// Judge makes the sweep's stop decisions from the levels finished so far (DESIGN §3: plateau,
// overload, TTFT p95 above stop_ttft, error rate). cmd wires it to the analysis package, which
// sweep does not import.
type Judge interface {
	// Decide returns a non-empty reason to stop after the last of levels, else "".
	Decide(levels []record.Level) string
}

// Refiner chooses the levels added after the planned ones (sweep.refine): each where an
// answer the analysis reads between two measured levels (the SLO limit, the knee or the
// capacity, the TTFT blow-up) is farthest from a measurement. cmd wires it to the analysis
// package.
type Refiner interface {
	// Refine returns the x of the next level to add — a concurrency (a whole number) on a
	// closed loop, an offered rate in requests/s on an open loop — and why (the text of
	// LevelRun.Refine). It returns 0 when no level is to be added: with why "" when every
	// answer lies close enough to a level already run, with why the reason when adding must
	// stop (an added level failed: errors, TTFT past stop_ttft).
	Refine(levels []record.Level) (x float64, why string)
}

// Plan is everything Run needs besides the client and the sink.
type Plan struct {
	// Levels are the target concurrencies, in order.
	Levels []int
	// Rates, when non-empty, makes the sweep arrival-rate (open-loop, DESIGN §3.9): level i
	// offers Rates[i] requests/s and Levels is unused (Validate requires exactly one of
	// Levels and Rates; StartIndex and Done count over Rates then).
	Rates []float64
	// Arrival is the arrival process of a rate sweep.
	Arrival Arrival
	// MaxConcurrency caps the requests in flight at a rate level (0: DefaultMaxConcurrency);
	// an arrival that finds the cap full waits client-side, its wait part of Sent − Scheduled.
	MaxConcurrency int
	// Trace, with Rates, makes the rate sweep a trace replay (DESIGN §3.9): a level offering
	// r requests/s replays the trace's window at time scale r ÷ its mean rate (arrival k at
	// its recorded time ÷ the scale, the window looped), instead of drawing Arrival's gaps.
	// Its Workload is then the trace's (TraceWorkload).
	Trace *workload.Trace
	// Protocol holds warmup, duration, min_requests, max_duration, ci_target, drain_timeout,
	// cooldown and the stop rules (the budget is applied by Run itself).
	Protocol Protocol
	// Workload produces the requests.
	Workload workload.Workload
	// ThinkTime is the pause of a worker between requests.
	ThinkTime time.Duration
	// StartIndex skips planned levels before it (resume); Done holds the finished levels
	// with their records so stop rules see them. Done levels with Refine set are added
	// levels: the planned part is then over, and only the rest of the added levels run.
	StartIndex int
	Done       []record.Level
	// Judge makes stop decisions; nil applies only the budget.
	Judge Judge
	// Refiner, with Refine > 0, adds up to Refine levels after the planned ones (the
	// planned levels all run, or the Judge stopped them), concurrencies or rates as the
	// planned levels are. Not with Schedule.
	Refiner Refiner
	Refine  int
	// Observer receives progress; may be nil.
	Observer Observer
	// Scraper, when non-nil, summarises server metrics per window into LevelRun.Server.
	Scraper WindowSummarizer
	// GPU, when non-nil, summarises GPU telemetry per window into LevelRun.GPU (DESIGN §3.10).
	GPU GPUSummarizer
	// Schedule, when non-nil, runs the levels on a fixed wall-clock schedule as one shard of a
	// sharded sweep (see Schedule): Judge is not consulted and MaxDuration, WarmupMax and the
	// steady-state extension do not apply.
	Schedule *Schedule
	// UnreachableAfter is how long every worker of a level may fail to connect before the
	// level ends and the sweep stops (StopUnreachable); 0 means DefaultUnreachableAfter.
	UnreachableAfter time.Duration
	// AnswerBudget, when non-nil, is the answer budget of the sweep's first level (DESIGN
	// §3.6): its requests carry it, and the level ends and the sweep stops (StopSilent) when it
	// runs out before a request of the level has answered.
	AnswerBudget *record.AnswerBudget
}

// WindowSummarizer summarises server metrics over a window [w0, w1) of Unix nanoseconds.
type WindowSummarizer interface {
	Summarize(w0, w1 int64) *record.ServerStats
}

// GPUSummarizer summarises the GPUs serving the target over a window [w0, w1) of Unix
// nanoseconds (server.GPUSampler); nil when no reading falls in it. It may wait, briefly,
// bounded and no longer than ctx, for the reading that closes the window.
type GPUSummarizer interface {
	SummarizeGPU(ctx context.Context, w0, w1 int64) *record.GPUStats
}
