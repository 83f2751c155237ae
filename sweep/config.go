package sweep

import (
	"fmt"
	"time"

	"github.com/kneecap/kneecap/sim"
)

// Config is a kneecap configuration file (DESIGN §9). Durations are strings such as "30s".
type Config struct {
	// Name names the run; it appears in the results directory name and chart titles.
	Name string `yaml:"name"`
	// Target is the endpoint under test.
	Target TargetConfig `yaml:"target"`
	// Simulator configures the in-process simulator used when Target.URL is empty.
	Simulator sim.Config `yaml:"simulator"`
	// Workload describes the requests.
	Workload WorkloadConfig `yaml:"workload"`
	// Sweep describes the levels and their protocol.
	Sweep Protocol `yaml:"sweep"`
	// SLO holds the service-level objectives; 0 means not used.
	SLO SLOConfig `yaml:"slo"`
	// ServerMetrics configures scraping of the server's Prometheus endpoint.
	ServerMetrics ServerMetricsConfig `yaml:"server_metrics"`
	// Analysis holds analysis options.
	Analysis AnalysisConfig `yaml:"analysis"`
	// Plan is the optional capacity plan.
	Plan PlanConfig `yaml:"plan"`
	// Output configures where results go.
	Output OutputConfig `yaml:"output"`
	// Shard makes this process one of several load generators that run one sweep together
	// (DESIGN §8); the zero value is an ordinary sweep.
	Shard ShardConfig `yaml:"shard,omitempty"`

	// src records where values came from (file, key lines, flag overrides) so that Validate
	// can name FILE:LINE; nil for configs built in code.
	src *source
}

// TargetConfig is the endpoint under test.
type TargetConfig struct {
	// URL is the OpenAI base URL including /v1; empty means the built-in simulator.
	URL string `yaml:"url"`
	// Model is the model name sent in every request.
	Model string `yaml:"model"`
	// API is chat or completions.
	API API `yaml:"api"`
	// APIKeyEnv names the environment variable holding the API key. The key itself never
	// appears in a file.
	APIKeyEnv string `yaml:"api_key_env"`
	// RequestTimeout bounds one request from send to the end of its stream.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// ExtraBody is merged into every request's JSON body.
	ExtraBody map[string]any `yaml:"extra_body"`
	// TLS configures certificate checks.
	TLS TLSConfig `yaml:"tls"`
	// ServerInfo, unless false, asks the server what it is before the sweep (GET of the
	// ServerInfoPaths at its root; see ServerInfo). Nil means true.
	ServerInfo *bool `yaml:"server_info,omitempty"`
}

// TLSConfig configures TLS for the target.
type TLSConfig struct {
	// CAFile is a PEM file of extra trusted CAs.
	CAFile string `yaml:"ca_file"`
	// InsecureSkipVerify disables certificate verification (warned about loudly).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Dist is a token-count distribution.
type Dist struct {
	// Dist is fixed, uniform, normal or lognormal.
	Dist string `yaml:"dist"`
	// Mean is the mean in tokens.
	Mean float64 `yaml:"mean"`
	// StdDev is the standard deviation in tokens (normal, lognormal).
	StdDev float64 `yaml:"stddev"`
	// Min and Max clamp the draw (uniform draws in [Min, Max]); 0 means unset.
	Min float64 `yaml:"min"`
	Max float64 `yaml:"max"`
}

// WorkloadConfig describes the requests a sweep sends.
type WorkloadConfig struct {
	// InputTokens is the prompt-length distribution.
	InputTokens Dist `yaml:"input_tokens"`
	// OutputTokens is the output-length distribution (max_tokens).
	OutputTokens Dist `yaml:"output_tokens"`
	// FixedOutput sends max_tokens equal to the drawn length and ignore_eos, so every request
	// generates exactly that many tokens.
	FixedOutput bool `yaml:"fixed_output"`
	// Dataset is a ShareGPT JSON/JSONL file or a JSONL file of {prompt, max_tokens}; empty means
	// synthetic prompts.
	Dataset string `yaml:"dataset"`
	// PrefixCache allows requests to share a prompt prefix; false gives every request a unique
	// prefix so the server's prefix cache cannot help.
	PrefixCache bool `yaml:"prefix_cache"`
	// ThinkTime is the pause of a worker between requests.
	ThinkTime time.Duration `yaml:"think_time"`
	// Seed seeds the workload.
	Seed int64 `yaml:"seed"`
}

// LevelsSpec is the sweep plan: an explicit list, or a geometric or linear progression.
type LevelsSpec struct {
	// List is an explicit list of concurrencies.
	List []int `yaml:"-"`
	// Start, Max, Factor and Step describe a progression: geometric when Factor > 1, linear
	// when Step > 0.
	Start  int     `yaml:"start"`
	Max    int     `yaml:"max"`
	Factor float64 `yaml:"factor"`
	Step   int     `yaml:"step"`
}

// Protocol is the sweep: section: the levels and the level protocol (DESIGN §3).
type Protocol struct {
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
	// Stop holds the stop rules.
	Stop StopRules `yaml:"stop"`
	// RecordChunks keeps per-chunk arrival offsets in records (default true).
	RecordChunks *bool `yaml:"record_chunks"`
}

// StopRules holds the sweep's stop rules.
type StopRules struct {
	// Plateau stops when TPS gains < 5% over two consecutive steps and TTFT p50 ≥ 3× the first
	// level's.
	Plateau bool `yaml:"plateau"`
	// Overload stops when TPS falls below 90% of the best level.
	Overload bool `yaml:"overload"`
	// MaxErrorRate stops when a level's error rate exceeds it.
	MaxErrorRate float64 `yaml:"max_error_rate"`
	// StopTTFT stops when TTFT p95 exceeds it.
	StopTTFT time.Duration `yaml:"stop_ttft"`
	// Budget bounds the whole sweep's time; 0 means no limit.
	Budget time.Duration `yaml:"budget"`
}

// SLOConfig holds service-level objectives; a zero value is not used.
type SLOConfig struct {
	TTFTP95 time.Duration `yaml:"ttft_p95"`
	TPOTP95 time.Duration `yaml:"tpot_p95"`
	E2EP95  time.Duration `yaml:"e2e_p95"`
}

// ServerMetricsConfig configures Prometheus scraping of the server.
type ServerMetricsConfig struct {
	// URL is the metrics endpoint, for example http://host:8000/metrics; empty disables.
	URL string `yaml:"url"`
	// Interval is the scrape interval.
	Interval time.Duration `yaml:"interval"`
}

// AnalysisConfig holds analysis options.
type AnalysisConfig struct {
	// KneeGain is the throughput gain per doubling below which the curve has reached its knee.
	KneeGain float64 `yaml:"knee_gain"`
}

// PlanConfig is a capacity plan: the load to serve and the cost of a replica.
type PlanConfig struct {
	ConcurrentUsers    int     `yaml:"concurrent_users"`
	QPS                float64 `yaml:"qps"`
	OutputTPS          float64 `yaml:"output_tps"`
	ReplicaCostPerHour float64 `yaml:"replica_cost_per_hour"`
	GPUsPerReplica     int     `yaml:"gpus_per_replica"`
}

// OutputConfig configures the results directory.
type OutputConfig struct {
	// Dir is the results directory; empty means runs/<UTC time>-<name>/.
	Dir string `yaml:"dir"`
}

// ShardConfig makes this process shard Index of Count load generators that together run one
// sweep against one server (DESIGN §8), each on its own machine, then `kneecap merge`. Every
// level's concurrency is split among the shards (shard i runs workers ⌊i·c/Count⌋ … of c) and
// every level runs on a fixed wall-clock schedule from StartAt, the same on every shard:
// level k (from 0) starts at StartAt + k × (warmup + max_duration + drain_timeout + cooldown +
// ScheduleSlack), the
// load runs from start + warmup for max_duration, and requests still in flight drain_timeout
// later are cancelled. The merge then picks each level's window as one process would have
// (see Schedule). The shards' clocks must agree (NTP keeps them within milliseconds, small
// next to a window of seconds).
type ShardConfig struct {
	// Index is this shard's number, 0 ≤ Index < Count.
	Index int `yaml:"index"`
	// Count is the number of shards; 0 means not sharded.
	Count int `yaml:"count"`
	// StartAt is the agreed start of the first level, RFC 3339 (for example
	// 2026-11-30T10:00:00Z).
	StartAt string `yaml:"start_at"`
}

// Sharded reports whether the configuration is one shard of a sharded sweep.
func (s ShardConfig) Sharded() bool { return s.Count > 0 }

// Start parses StartAt.
func (s ShardConfig) Start() (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s.StartAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("start_at %q: not an RFC 3339 time such as 2026-11-30T10:00:00Z", s.StartAt)
	}
	return t, nil
}

// String formats the shard as "i/N".
func (s ShardConfig) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }
