// Package config is kneecap's configuration file (DESIGN §9): the Config type and its sections,
// the defaults every file is decoded over, YAML decoding that remembers the FILE:LINE of every
// key, validation that reports every problem at once, the redacted copy written to a results
// directory, and the conversion into the analysis options. The sections the sweep runs (the
// level protocol, stop rules, workload) are sweep's types; config only names and checks them.
package config

import (
	"fmt"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
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
	Workload workload.WorkloadConfig `yaml:"workload"`
	// Sweep describes the levels and their protocol.
	Sweep sweep.Protocol `yaml:"sweep"`
	// SLO holds the service-level objectives (ttft_p95, itl_p99, …: p50, p95 or p99 of TTFT,
	// TPOT, ITL or E2E); 0 means not used.
	SLO analysis.SLO `yaml:"slo"`
	// ServerMetrics configures scraping of the server's Prometheus endpoint.
	ServerMetrics server.ServerMetricsConfig `yaml:"server_metrics"`
	// GPUMetrics configures GPU telemetry: the DCGM exporter or nvidia-smi (DESIGN §3.10).
	GPUMetrics server.GPUMetricsConfig `yaml:"gpu_metrics"`
	// Analysis holds analysis options.
	Analysis AnalysisConfig `yaml:"analysis"`
	// Plan is the optional capacity plan.
	Plan analysis.Plan `yaml:"plan"`
	// Output configures where results go.
	Output OutputConfig `yaml:"output"`
	// Shard makes this process one of several load generators that run one sweep together
	// (DESIGN §8); the zero value is an ordinary sweep.
	Shard ShardConfig `yaml:"shard,omitempty"`
	// Scenarios make the configuration a scenario grid (DESIGN §5.3): one sweep per scenario,
	// each the configuration above with the scenario's workload keys overlaid. Empty: one
	// ordinary sweep.
	Scenarios []Scenario `yaml:"scenarios,omitempty"`

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
	// API is chat, completions, responses or messages (DESIGN §3.11).
	API record.API `yaml:"api"`
	// APIKeyEnv names the environment variable holding the API key. The key itself never
	// appears in a file.
	APIKeyEnv string `yaml:"api_key_env"`
	// RequestTimeout bounds one request from send to the end of its stream.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// TTFTTimeout bounds the time from the send to a request's first token (content or
	// reasoning chunk); 0 = off. A request it ends is class timeout.
	TTFTTimeout time.Duration `yaml:"ttft_timeout"`
	// StallTimeout bounds the gap between two content chunks (or parts of a tool call) of a
	// stream after its first token (other events do not count); 0 = off. A request it ends is
	// class timeout.
	StallTimeout time.Duration `yaml:"stall_timeout"`
	// AnswerBudget bounds every wait before the server first answers (DESIGN §3.6): the
	// preflight, the prompt sizing and the first level share it, and each answer before the
	// first level starts it again; 0 = off.
	AnswerBudget time.Duration `yaml:"answer_budget"`
	// ExtraBody is merged into every request's JSON body.
	ExtraBody map[string]any `yaml:"extra_body"`
	// Headers are HTTP headers (name: value) sent on every request to the target's origin
	// and to no other (--header K:V adds to them). The values of secret-looking names
	// (redact.SecretHeader: Authorization, X-Api-Key, *-Key, *Token*, Cookie, …) are secrets:
	// config.yaml holds REDACTED for them, and --resume needs them given again.
	Headers map[string]string `yaml:"headers,omitempty"`
	// TLS configures certificate checks.
	TLS TLSConfig `yaml:"tls"`
	// ServerInfo, unless false, asks the server what it is before the sweep (GET of the
	// ServerInfoPaths at its root; see ServerInfo). Nil means true.
	ServerInfo *bool `yaml:"server_info,omitempty"`
	// TokensPerChunk is the most tokens the server streams in one chunk, when known (SGLang's
	// --stream-interval; 0 = as the server's info says, else unknown): a usage.completion_tokens
	// beyond 4 × this × the content chunks is not believed (4 for the tokens a speculative
	// decoding step may accept; unknown: 64 a chunk).
	TokensPerChunk int `yaml:"tokens_per_chunk,omitempty"`
}

// TLSConfig configures TLS for the target.
type TLSConfig struct {
	// CAFile is a PEM file of extra trusted CAs.
	CAFile string `yaml:"ca_file"`
	// InsecureSkipVerify disables certificate verification (warned about loudly).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// AnalysisConfig holds analysis options.
type AnalysisConfig struct {
	// KneeGain is the throughput gain per doubling below which the curve has reached its
	// efficient point (its knee too when the curve is smooth; DESIGN §4.3).
	KneeGain float64 `yaml:"knee_gain"`
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
// next to a window of seconds), or be measured against one shard's (ServeClock, ClockServer).
type ShardConfig struct {
	// Index is this shard's number, 0 ≤ Index < Count.
	Index int `yaml:"index"`
	// Count is the number of shards; 0 means not sharded.
	Count int `yaml:"count"`
	// StartAt is the agreed start of the first level, RFC 3339 (for example
	// 2026-11-30T10:00:00Z).
	StartAt string `yaml:"start_at"`
	// ServeClock is the address (host:port) on which this process serves its clock to the
	// other shards (--serve-clock); empty: it serves none.
	ServeClock string `yaml:"serve_clock"`
	// ClockServer is the address (host:port) of the clock this shard measures its own against
	// before every level (--clock-server); empty: it trusts its clock (NTP).
	ClockServer string `yaml:"clock_server"`
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

// DefaultAnswerBudget is target.answer_budget's default: a server that never answers ends the
// sweep within it.
const DefaultAnswerBudget = 90 * time.Second

// Default returns the configuration every file is decoded over (DESIGN §9): chat API,
// key from OPENAI_API_KEY, 10 min request timeout, 60 s to the first token, 30 s of stall
// between chunks, 90 s for the server to first answer, 512 input / 128 output tokens (fixed, with
// ignore_eos) sized in the server's tokens (prompt_sizing auto), levels 1, 2, 4 … 256 (a rate
// sweep: Poisson arrivals, at most 4,096 requests in flight), every stop rule on (a rate sweep
// stops after 2 levels that did not sustain their rate), SLO TTFT p95 ≤ 2 s and TPOT p95 ≤ 50 ms, knee gain 10%, server metrics every
// 1 s, per-chunk records, and the demo simulator.
func Default() Config {
	recordChunks := true
	return Config{
		Name: "",
		Target: TargetConfig{
			API:            record.APIChat,
			APIKeyEnv:      DefaultAPIKeyEnv(record.APIChat),
			RequestTimeout: 10 * time.Minute,
			TTFTTimeout:    60 * time.Second,
			StallTimeout:   30 * time.Second,
			AnswerBudget:   DefaultAnswerBudget,
		},
		Simulator: sim.Config{Profile: "demo"},
		Workload: workload.WorkloadConfig{
			InputTokens:  workload.Dist{Dist: "fixed", Mean: 512},
			OutputTokens: workload.Dist{Dist: "fixed", Mean: 128},
			FixedOutput:  true,
			Seed:         1,
			PromptSizing: record.SizingAuto,
		},
		Sweep: sweep.Protocol{
			Levels:          sweep.LevelsSpec{Start: 1, Max: 256, Factor: 2},
			MaxConcurrency:  sweep.DefaultMaxConcurrency,
			Warmup:          5 * time.Second,
			WarmupMax:       2 * time.Minute,
			Duration:        30 * time.Second,
			MinRequests:     100,
			MaxDuration:     3 * time.Minute,
			CITarget:        0.05,
			DrainTimeout:    60 * time.Second,
			RetryExcluded:   1,
			ClientTolerance: selfcheck.DefaultClientTolerance,
			Stop: record.StopRules{
				Plateau:          true,
				Overload:         true,
				MaxErrorRate:     0.05,
				StopTTFT:         20 * time.Second,
				MaxUnsustainable: 2,
			},
			RecordChunks: &recordChunks,
		},
		SLO:           analysis.SLO{TTFTP95: 2 * time.Second, TPOTP95: 50 * time.Millisecond},
		ServerMetrics: server.ServerMetricsConfig{Interval: time.Second},
		GPUMetrics:    server.GPUMetricsConfig{Interval: time.Second},
		Analysis:      AnalysisConfig{KneeGain: 0.10},
		Plan:          analysis.Plan{GPUsPerReplica: 1},
	}
}

// DirName is the default results directory suffix of a shard: "shard-i-of-N".
func (s ShardConfig) DirName() string {
	return fmt.Sprintf("shard-%d-of-%d", s.Index, s.Count)
}

// Demo returns the configuration of a bare `kneecap sweep`: the demo simulator (32 slots, step
// 4 ms + 250 µs per sequence, so t(32) = 12 ms and throughput plateaus at ≈ 2,667 tokens/s
// from concurrency 32), levels 1 … 128 doubling, short windows and 64-token answers so the
// planned sweep takes about a minute on two cores with the knee in the middle; then two levels
// are added where answers lie between doublings.
func Demo() Config {
	c := Default()
	c.Name = "demo"
	c.Simulator = sim.Config{Profile: sim.ProfileDemo}
	c.Workload.InputTokens = workload.Dist{Dist: "fixed", Mean: 128}
	c.Workload.OutputTokens = workload.Dist{Dist: "fixed", Mean: 64}
	c.Sweep.Levels = sweep.LevelsSpec{Start: 1, Max: 128, Factor: 2}
	c.Sweep.Warmup = 1500 * time.Millisecond
	c.Sweep.WarmupMax = 20 * time.Second
	c.Sweep.Duration = 4 * time.Second
	c.Sweep.MinRequests = 20
	c.Sweep.MaxDuration = 8 * time.Second
	c.Sweep.DrainTimeout = 20 * time.Second
	c.Sweep.Refine = 2 // measure near the knee and the SLO limit, not only at doublings
	return c
}
