package record

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ServerInfo is what the server under test says it is: the engine, its version and the
// settings that bound its concurrency, when it reports them. It goes into levels.json and the
// reports, so a run states what it measured ("vLLM 0.6.3") beside the endpoint.
type ServerInfo struct {
	// Engine is vLLM, SGLang, TGI, llama.cpp, Ollama or kneecap-sim.
	Engine string `json:"engine"`
	// Version is the engine's version or build, as it reports it ("" when it does not).
	Version string `json:"version,omitempty"`
	// Settings are reported limits on concurrency and batching, by the engine's own names:
	// max_running_requests (SGLang), max_concurrent_requests and max_batch_total_tokens
	// (TGI), total_slots (llama.cpp), max_num_seqs (kneecap-sim).
	Settings map[string]string `json:"settings,omitempty"`
	// From is the endpoint the information came from ("GET /version").
	From string `json:"from"`
}

// PromptSizing is how a sweep sized its prompts in the server's tokens (DESIGN §3.6): it is
// printed once before the first level and recorded in levels.json ("prompt_sizing").
type PromptSizing struct {
	// Method is the method used: tokenize, usage, tokenizer or words (auto resolved).
	Method string `json:"method"`
	// Source says what counted: the tokenize endpoint and its form, the tokenizer file, the
	// usage of the probe requests; empty for words.
	Source string `json:"source,omitempty"`
	// Exact reports that the length of every prompt is known: the synthetic vocabulary's
	// words were each counted (or, for a dataset, every entry was).
	Exact bool `json:"exact"`
	// TokensPerWord is the server's tokens per word: the mean over the synthetic vocabulary,
	// or the fitted slope (usage, and a dataset's entries).
	TokensPerWord float64 `json:"tokens_per_word"`
	// OverheadTokens is what the server adds to every prompt, in tokens: chat template and
	// special tokens (the fit's intercept).
	OverheadTokens float64 `json:"overhead_tokens"`
	// ResidualTokens is the fit's root-mean-square residual (usage; a dataset's entries), or
	// the largest difference between the counter and the length a synthetic prompt was built
	// to (exact), in tokens.
	ResidualTokens float64 `json:"residual_tokens"`
	// Probes is the number of counts taken: tokenize calls, tokenizer encodings, probe
	// requests.
	Probes int `json:"probes"`
	// MinPromptTokens is the shortest prompt the sizing builds (the overhead and the first
	// word); a shorter requested length is sent at this length.
	MinPromptTokens int `json:"min_prompt_tokens,omitempty"`
	// MaxModelLen is the context limit the tokenize endpoint reported (0: unknown).
	MaxModelLen int `json:"max_model_len,omitempty"`
	// Entries and Counted are, for a dataset, its usable entries and how many of them were
	// counted one by one (the others by the fit).
	Entries int `json:"dataset_entries,omitempty"`
	Counted int `json:"dataset_counted,omitempty"`
	// Notes say what the sizing had to fall back on or found doubtful.
	Notes []string `json:"notes,omitempty"`
}

// TraceInfo describes the trace a sweep replayed, as levels.json and analysis.json record it.
type TraceInfo struct {
	// File is the trace file, as configured; Path its absolute path and SHA256 the hex
	// SHA-256 of its content, which --resume checks (LoadTrace sets both).
	File   string `json:"file"`
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Format is the format read.
	Format TraceFormat `json:"format"`
	// Window is the slice replayed ("" = all).
	Window string `json:"window,omitempty"`
	// Requests is the window's requests: one pass; Skipped the file's rows left out (failed
	// requests, no output), SkipReason why.
	Requests   int    `json:"requests"`
	Skipped    int    `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
	// DurationS is one pass of the window in seconds at scale 1: the window's length, or
	// (open-ended, or past the last arrival) from its start to its last arrival plus one mean
	// gap of its arrivals.
	DurationS float64 `json:"duration_s"`
	// MeanRPS is Requests ÷ DurationS, the recorded mean rate: a level at time scale s offers
	// s × MeanRPS requests/s.
	MeanRPS float64 `json:"mean_rps"`
	// MeanInputTokens and MeanOutputTokens are the window's mean recorded lengths.
	MeanInputTokens  float64 `json:"mean_input_tokens"`
	MeanOutputTokens float64 `json:"mean_output_tokens"`
	// BlockTokens is the tokens of a hash_ids block when the trace has them (Mooncake), and
	// SharedBlockShare the share of the window's blocks whose id an earlier request had.
	BlockTokens      int     `json:"block_tokens,omitempty"`
	SharedBlockShare float64 `json:"shared_block_share,omitempty"`
	// Note says how the window was read when not as given (an END past the data).
	Note string `json:"note,omitempty"`
}

// TraceFormat names the format of a trace file (workload.trace.format).
type TraceFormat string

// Trace formats.
const (
	// TraceAuto detects the format from the content ("" is the same).
	TraceAuto TraceFormat = "auto"
	// TraceMooncake is Mooncake's JSONL: {"timestamp": ms, "input_length": N,
	// "output_length": M, "hash_ids": [...]} a line, timestamps from the first request.
	TraceMooncake TraceFormat = "mooncake"
	// TraceBurstGPT is BurstGPT's CSV: Timestamp,Model,Request tokens,Response tokens,Total
	// tokens,Log Type (Timestamp in seconds from the trace's start).
	TraceBurstGPT TraceFormat = "burstgpt"
	// TraceAzure is the Azure LLM inference trace's CSV (2023, 2024):
	// TIMESTAMP,ContextTokens,GeneratedTokens, TIMESTAMP a datetime such as
	// 2023-11-16 18:15:46.6805900.
	TraceAzure TraceFormat = "azure"
)

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
	// MaxUnsustainable stops a rate sweep after this many levels that did not sustain their
	// offered rate (0 = never for this reason).
	MaxUnsustainable int `yaml:"max_unsustainable"`
}

// MinPercentileSamples is the population a percentile p needs to be more than its largest
// member: 100 ÷ (100 − p) (p95: 20, p99: 100). The client-effect estimates and the SLO's
// evidence (the analysis) hold percentiles to it.
func MinPercentileSamples(p float64) int {
	if p >= 100 {
		return math.MaxInt
	}
	return int(math.Ceil(100 / (100 - p)))
}

// MaxRealizedOff is the largest relative difference between a rate level's realised arrival
// rate — the arrivals its schedule drew inside the window ÷ the window — and its offered
// rate that its window accepts (DESIGN §3.9): a Poisson draw of 70 arrivals strays by 12%
// (one standard deviation), so a 10 s window at 7 requests/s may offer the server 5.4. The
// window extends slice by slice, up to max_duration, until the realised rate is within it
// (RealizedWithin).
const MaxRealizedOff = 0.05

// RealizedWithin reports whether a window of windowS seconds that realised realized
// requests/s of an offered rate of offered requests/s is close enough: within MaxRealizedOff
// of it, or within one arrival of the offered count where that is wider (fewer than 20
// arrivals offered: a count cannot come closer than one). A window of unknown length
// (+Inf) is held to MaxRealizedOff alone.
func RealizedWithin(realized, offered, windowS float64) bool {
	return math.Abs(realized/offered-1) <= math.Max(MaxRealizedOff, 1/(offered*windowS))
}

// Name formats the engine and its version: "vLLM 0.6.3" ("" for nil).
func (s *ServerInfo) Name() string {
	if s == nil {
		return ""
	}
	if s.Version == "" {
		return s.Engine
	}
	return s.Engine + " " + s.Version
}

// String formats the engine and version, then the settings: "SGLang 0.4.1
// (max_running_requests 256)".
func (s *ServerInfo) String() string {
	if s == nil {
		return ""
	}
	out := s.Name()
	if len(s.Settings) > 0 {
		keys := make([]string, 0, len(s.Settings))
		for k := range s.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + " " + s.Settings[k]
		}
		out += " (" + strings.Join(parts, ", ") + ")"
	}
	return out
}

// TokensPerChunk returns the most tokens the server says it streams in one chunk (SGLang's
// stream_interval, the simulator's tokens_per_chunk), or 0 when it does not say.
func (s *ServerInfo) TokensPerChunk() int {
	if s == nil {
		return 0
	}
	for _, k := range []string{"stream_interval", "tokens_per_chunk"} {
		if n, err := strconv.Atoi(s.Settings[k]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// MaxModelLen returns the context limit in tokens the server says it has (SGLang's
// context_length, the simulator's max_model_len), or 0 when it does not say.
func (s *ServerInfo) MaxModelLen() int {
	if s == nil {
		return 0
	}
	for _, k := range []string{"context_length", "max_model_len"} {
		if n, err := strconv.Atoi(s.Settings[k]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// String describes the sizing on one line: the method, what counted, the rule found.
func (p PromptSizing) String() string {
	var b strings.Builder
	b.WriteString(p.Method)
	if p.Source != "" {
		fmt.Fprintf(&b, " (%s)", p.Source)
	}
	fit := fmt.Sprintf("tokens = %.1f + %.3f × words (residual %.2f tokens)", p.OverheadTokens, p.TokensPerWord, p.ResidualTokens)
	switch {
	case p.Method == SizingWords || p.Method == "":
		b.WriteString(": one token a word")
	case p.Entries > 0 && p.Counted == p.Entries:
		fmt.Fprintf(&b, ": every one of the %d dataset entries counted (%s)", p.Entries, fit)
	case p.Entries > 0:
		fmt.Fprintf(&b, ": %d of the %d dataset entries counted, the others by the fit %s", p.Counted, p.Entries, fit)
	case p.Exact:
		fmt.Fprintf(&b, ": exact, %.3g tokens/word (each vocabulary word counted), %.0f tokens of overhead, ",
			p.TokensPerWord, p.OverheadTokens)
		if p.ResidualTokens == 0 {
			b.WriteString("whole prompts verified")
		} else {
			fmt.Fprintf(&b, "whole prompts off by up to %.0f tokens", p.ResidualTokens)
		}
	default:
		b.WriteString(": prompt_" + fit)
	}
	if p.Probes > 0 {
		fmt.Fprintf(&b, "; %d counts", p.Probes)
	}
	return b.String()
}

// Prompt sizing methods, the values of workload.prompt_sizing (DESIGN §3.6).
const (
	// SizingAuto takes the first method available: the tokenizer file when workload.tokenizer
	// is set, else the server's tokenize endpoint, else usage calibration, else words (with a
	// warning).
	SizingAuto = "auto"
	// SizingTokenize counts with the server's own tokenize endpoint (vLLM, SGLang, TGI,
	// llama.cpp).
	SizingTokenize = "tokenize"
	// SizingUsage fits usage.prompt_tokens = overhead + tokens_per_word × words to a few probe
	// requests (max_tokens 1).
	SizingUsage = "usage"
	// SizingTokenizer counts with workload.tokenizer, a Hugging Face tokenizer.json.
	SizingTokenizer = "tokenizer"
	// SizingWords sizes prompts in whitespace-separated words: one token a word, the
	// simulator's default rule and the prompts of kneecap before prompt sizing.
	SizingWords = "words"
)
