package sweep

import (
	"time"

	"github.com/kneecap/kneecap/record"
)

// Protocol is the sweep: section: the levels and the level protocol (DESIGN §3).
type Protocol struct {
	// Levels are the concurrencies of a closed-loop sweep.
	Levels LevelsSpec `yaml:"levels"`
	// Warmup is the minimum warmup time; warmup also waits for every worker's first request.
	Warmup time.Duration `yaml:"warmup"`
	// WarmupMax caps the warmup.
	WarmupMax time.Duration `yaml:"warmup_max"`
	// Duration is the minimum measurement window.
	Duration time.Duration `yaml:"duration"`
	// MinRequests is the minimum number of completions in the window.
	MinRequests int `yaml:"min_requests"`
	// MaxDuration caps the window when the steady-state test keeps failing.
	MaxDuration time.Duration `yaml:"max_duration"`
	// CITarget is the largest accepted 95% CI half-width of the mean slice TPS, relative.
	CITarget float64 `yaml:"ci_target"`
	// DrainTimeout bounds the drain; requests still in flight are then cancelled.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// Cooldown is a pause between levels.
	Cooldown time.Duration `yaml:"cooldown"`
	// Refine is the number of levels added after the planned ones, each where the SLO limit,
	// the knee or the TTFT blow-up lies farthest from a measured level (0 = none).
	Refine int `yaml:"refine"`
	// ClientTolerance is the fraction of a number (TTFT p95, the offered load, …) the client's
	// lateness may have moved it by before a level is client-bound (DESIGN §3.3). The
	// configuration requires it in (0, 1), default 1%; a Protocol built without it (0) judges
	// at DefaultClientTolerance.
	ClientTolerance float64 `yaml:"client_tolerance"`
	// RetryExcluded is how many times a level excluded for steadiness or the client's lateness
	// is run again, each time with twice the window, before levels are added (0 = never;
	// DESIGN §3.4).
	RetryExcluded int `yaml:"retry_excluded"`
	// Stop holds the stop rules.
	Stop record.StopRules `yaml:"stop"`
	// RecordChunks keeps per-chunk arrival offsets in records (default true).
	RecordChunks *bool `yaml:"record_chunks"`
	// Mode is record.ModeConcurrency (closed loop; "" is the same) or record.ModeRate (open loop): the
	// levels are Levels, numbers of clients, or Rates, offered arrival rates in requests/s.
	Mode record.Mode `yaml:"mode,omitempty"`
	// Rates are the offered rates of a rate sweep (a list, a progression or auto).
	Rates RatesSpec `yaml:"rates,omitempty"`
	// Arrival is a rate sweep's arrival process: poisson ("" is the same), gamma or constant.
	Arrival ArrivalProcess `yaml:"arrival,omitempty"`
	// Burstiness is the gamma process's shape (1 = Poisson, < 1 burstier; 0 means 1); only
	// with arrival gamma.
	Burstiness float64 `yaml:"burstiness,omitempty"`
	// ArrivalSeed seeds the arrival schedules; 0 means the workload's seed.
	ArrivalSeed uint64 `yaml:"arrival_seed,omitempty"`
	// TimeScales are a trace replay's levels (workload.trace): level i replays the trace with
	// its arrival times ÷ TimeScales[i] (2 = twice the recorded traffic); empty means [1].
	TimeScales []float64 `yaml:"time_scales,omitempty,flow"`
	// MaxConcurrency caps the requests in flight at a rate level (0: DefaultMaxConcurrency);
	// arrivals that find it full wait client-side, their wait recorded as schedule lag.
	MaxConcurrency int `yaml:"max_concurrency,omitempty"`
}

// TimeScalesOf returns the time scales of a trace replay: TimeScales, or [1] when empty.
func (p Protocol) TimeScalesOf() []float64 {
	if len(p.TimeScales) == 0 {
		return []float64{1}
	}
	return p.TimeScales
}

// LongestWindow is the longest measurement window a level may run: max(duration,
// max_duration).
func (p Protocol) LongestWindow() time.Duration { return max(p.Duration, p.MaxDuration) }

// RateMode reports whether the protocol is an arrival-rate (open-loop) sweep.
func (p Protocol) RateMode() bool { return p.Mode.IsRate() }

// ArrivalOf returns the protocol's arrival process, its seed the protocol's arrival_seed or,
// when that is 0, workloadSeed.
func (p Protocol) ArrivalOf(workloadSeed int64) Arrival {
	seed := p.ArrivalSeed
	if seed == 0 {
		seed = uint64(workloadSeed)
	}
	return Arrival{Process: p.Arrival, Burstiness: p.Burstiness, Seed: seed}
}

// InFlightCap returns the most requests a rate level runs at once: MaxConcurrency, or
// DefaultMaxConcurrency when it is 0 — the number of streams the client's limits and
// connection pool must carry.
func (p Protocol) InFlightCap() int { return inFlightCap(p.MaxConcurrency) }

// inFlightCap is a rate level's cap given max_concurrency n: n, or DefaultMaxConcurrency
// when n ≤ 0.
func inFlightCap(n int) int {
	if n > 0 {
		return n
	}
	return DefaultMaxConcurrency
}
