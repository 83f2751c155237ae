package sim

import "time"

// Mode selects the engine model.
type Mode string

const (
	// modeBatching is the continuous-batching engine: max_num_seqs decode slots, a KV budget,
	// an FCFS waiting queue and a step time that grows with the batch.
	modeBatching Mode = "batching"
	// modeFixed gives every request the configured TTFT and ITL, with unlimited capacity unless
	// FixedSlots limits it.
	modeFixed Mode = "fixed"
)

// Compute selects how the batching engine spends a step's time.
type Compute string

const (
	// computeSleep waits out each step on a timer: the engine costs almost no CPU, as a GPU
	// server's host process.
	computeSleep Compute = "sleep"
	// computeSpin burns each step on one CPU thread, as a CPU inference engine (llama.cpp on
	// CPU) does, so the engine competes with its clients for the machine's cores.
	computeSpin Compute = "spin"
)

// Config is the simulated engine's configuration: the `simulator:` section of a kneecap config
// file and the flags of `kneecap sim`. Durations are YAML strings such as "4ms".
type Config struct {
	// Profile names a preset applied before the other fields: demo, fixed or seed-article.
	Profile string `yaml:"profile" json:"profile,omitempty"`
	// Mode is batching or fixed.
	Mode Mode `yaml:"mode" json:"mode"`
	// Model is the model name served by /v1/models and echoed in responses.
	Model string `yaml:"model" json:"model,omitempty"`
	// MaxNumSeqs is the number of decode slots S (batching mode).
	MaxNumSeqs int `yaml:"max_num_seqs" json:"max_num_seqs"`
	// Compute is how the batching engine spends a step: sleep (default) or spin.
	Compute Compute `yaml:"compute" json:"compute,omitempty"`
	// KVCacheTokens is the KV-cache capacity in tokens; 0 means unlimited.
	KVCacheTokens int `yaml:"kv_cache_tokens" json:"kv_cache_tokens"`
	// MaxModelLen is the context-length limit in tokens (prompt + max_tokens); requests over it
	// get HTTP 400. 0 means unlimited.
	MaxModelLen int `yaml:"max_model_len" json:"max_model_len"`
	// PrefillTPS is the prefill speed in prompt tokens per second.
	PrefillTPS float64 `yaml:"prefill_tps" json:"prefill_tps"`
	// MaxBatchedTokens caps the prompt tokens prefilled in one step (chunked prefill).
	MaxBatchedTokens int `yaml:"max_batched_tokens" json:"max_batched_tokens"`
	// StepBase is the fixed cost of one decode step.
	StepBase time.Duration `yaml:"step_base" json:"step_base_ns"`
	// StepPerSeq is the added cost of one decode step per running sequence.
	StepPerSeq time.Duration `yaml:"step_per_seq" json:"step_per_seq_ns"`
	// StepPerKVToken is the added cost of one decode step per KV token in use.
	StepPerKVToken time.Duration `yaml:"step_per_kv_token" json:"step_per_kv_token_ns"`
	// Preemption evicts the newest running request (recompute) when KV is exhausted.
	Preemption bool `yaml:"preemption" json:"preemption"`
	// TTFT is the time to first token in fixed mode.
	TTFT time.Duration `yaml:"ttft" json:"ttft_ns"`
	// ITL is the inter-token latency in fixed mode.
	ITL time.Duration `yaml:"itl" json:"itl_ns"`
	// FixedSlots is the number of requests fixed mode serves at once; the others wait FCFS
	// and a request's TTFT counts from when it gets a slot. 0 means unlimited.
	FixedSlots int `yaml:"fixed_slots" json:"fixed_slots,omitempty"`
	// OutputTokens is the mean output length when the request does not force max_tokens
	// (ignore_eos); lengths are drawn from a seeded distribution capped by max_tokens.
	OutputTokens int `yaml:"output_tokens" json:"output_tokens"`
	// OutputDist is the output-length distribution of requests that do not force max_tokens:
	// geometric (a constant end-of-sequence probability 1/OutputTokens per token, mean
	// OutputTokens) or fixed (exactly OutputTokens). Either is capped by max_tokens.
	OutputDist string `yaml:"output_dist" json:"output_dist,omitempty"`
	// TokensPerChunk is the number of tokens sent in each streamed chunk.
	TokensPerChunk int `yaml:"tokens_per_chunk" json:"tokens_per_chunk"`
	// Tokenizer is the token rule of prompts and output text: words (the default: one token per
	// whitespace-separated word) or subword (⌈n ÷ 4⌉ tokens for a word of n bytes).
	Tokenizer Tokenizer `yaml:"tokenizer" json:"tokenizer,omitempty"`
	// ChatTemplateTokens is the number of tokens the chat template adds to the prompt of every
	// chat request (not to completions); 0 = none.
	ChatTemplateTokens int `yaml:"chat_template_tokens" json:"chat_template_tokens,omitempty"`
	// ReasoningTokens makes the first min(N, output) output tokens of each chat request
	// reasoning: streamed as delta.reasoning_content (returned as message.reasoning_content),
	// the rest as content, as vLLM's reasoning parsers (DeepSeek-R1) do (newer vLLM names the
	// field "reasoning"; this is DeepSeek's name, which go-openai decodes); usage counts both in
	// completion_tokens and reports completion_tokens_details.reasoning_tokens. 0 = none.
	ReasoningTokens int `yaml:"reasoning_tokens" json:"reasoning_tokens,omitempty"`
	// CloseAfterStream closes the connection after every streamed response while advertising
	// keep-alive (Connection: keep-alive, Keep-Alive: timeout=5), as llama.cpp's llama-server
	// does: a client that reuses the connection gets EOF before any response byte.
	CloseAfterStream bool `yaml:"close_after_stream" json:"close_after_stream,omitempty"`
	// PrefixCaching caches the KV blocks of prompts and outputs by the hash of their token
	// prefix, as vLLM V1's enable_prefix_caching: a request whose leading full blocks are
	// cached prefills only the rest (batching mode only; fixed mode has no prefill and ignores
	// it). Usage then reports prompt_tokens_details.cached_tokens.
	PrefixCaching bool `yaml:"prefix_caching" json:"prefix_caching,omitempty"`
	// BlockSize is the number of tokens in one KV block, the unit of prefix caching (vLLM's
	// default 16).
	BlockSize int `yaml:"block_size" json:"block_size,omitempty"`
	// PrefixCacheBlocks is the capacity of the LRU of cached blocks; 0 = the default,
	// KVCacheTokens ÷ BlockSize when the KV cache is limited, else 65,536 (PrefixCacheCapacity).
	PrefixCacheBlocks int `yaml:"prefix_cache_blocks" json:"prefix_cache_blocks,omitempty"`
	// GPUs is the number of simulated GPUs of the replica whose DCGM exporter families /metrics
	// serves (DESIGN §6, GPU power); 0, the default, serves none. At most 64.
	GPUs int `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	// Power is the power model of each simulated GPU; unset (both 0) with GPUs > 0 it is
	// DefaultIdleW and DefaultMaxW. Unused when GPUs is 0.
	Power Power `yaml:"power,omitempty" json:"power,omitzero"`
	// Adapters are the LoRA adapters served beside Model, each a model name of its own whose
	// requests cost Slowdown times as much (adapters.go); none by default.
	Adapters []Adapter `yaml:"adapters,omitempty" json:"adapters,omitempty"`
	// Embed is the embedding engine of POST /v1/embeddings (its zero fields take the
	// defaults); the streaming APIs never use it.
	Embed Embed `yaml:"embed,omitempty" json:"embed,omitzero"`
	// Faults configures fault injection.
	Faults Faults `yaml:"faults" json:"faults"`
	// Seed seeds every random choice of the engine.
	Seed int64 `yaml:"seed" json:"seed"`
}

// Power is a simulated GPU's power model: it draws IdleW with nothing running and rises
// linearly with the running count to MaxW with every slot busy (DESIGN §6, GPU power).
type Power struct {
	// IdleW is the power drawn with no request running, in W (≥ 0).
	IdleW float64 `yaml:"idle_w" json:"idle_w"`
	// MaxW is the power drawn with every slot running, in W (≥ IdleW).
	MaxW float64 `yaml:"max_w" json:"max_w"`
}

// Faults configures fault injection. Rates are probabilities per request in [0, 1].
type Faults struct {
	// ErrorRate is the share of requests answered with HTTP 500.
	ErrorRate float64 `yaml:"error_rate" json:"error_rate"`
	// DisconnectRate is the share of streams cut mid-way without [DONE].
	DisconnectRate float64 `yaml:"disconnect_rate" json:"disconnect_rate"`
	// QueueLimit429 answers HTTP 429 when the waiting queue is longer than this; 0 disables.
	QueueLimit429 int `yaml:"queue_limit_429" json:"queue_limit_429"`
	// RetryAfter is the Retry-After the injected 429 answers (QueueLimit429) carry, in whole
	// seconds rounded up, as a gateway's rate limiter sends it; 0 sends none (vLLM sends none).
	RetryAfter time.Duration `yaml:"retry_after" json:"retry_after_ns,omitempty"`
	// StallRate is the share of requests that stall once mid-stream for StallDuration.
	StallRate float64 `yaml:"stall_rate" json:"stall_rate"`
	// StallDuration is how long a stall lasts.
	StallDuration time.Duration `yaml:"stall_duration" json:"stall_duration_ns"`
	// UsagePromptTokens, when set, is the prompt_tokens every usage reports instead of the
	// truth (any integer: 0, 1e15, negative); total_tokens is then the sum of the reported
	// counts. Nil reports the truth.
	UsagePromptTokens *int64 `yaml:"usage_prompt_tokens,omitempty" json:"usage_prompt_tokens,omitempty"`
	// UsageCompletionTokens, when set, is the completion_tokens every usage reports instead of
	// the truth (0, 1e12, negative …); the content streamed stays true. Nil reports the truth.
	UsageCompletionTokens *int64 `yaml:"usage_completion_tokens,omitempty" json:"usage_completion_tokens,omitempty"`
	// OmitUsage reports no usage at all: no usage chunk in a stream, even with
	// stream_options.include_usage, and no usage field in a plain answer.
	OmitUsage bool `yaml:"omit_usage" json:"omit_usage,omitempty"`
}

// defaultPrefixCacheBlocks is the prefix-cache capacity in blocks with an unlimited KV cache.
const defaultPrefixCacheBlocks = 65536

// PrefixCacheCapacity is the number of blocks the prefix cache holds: PrefixCacheBlocks when
// set, else KVCacheTokens ÷ BlockSize (at least 1) with a limited KV cache, else 65,536.
func (c Config) PrefixCacheCapacity() int {
	if c.PrefixCacheBlocks > 0 {
		return c.PrefixCacheBlocks
	}
	if c.KVCacheTokens > 0 && c.BlockSize > 0 {
		return max(1, c.KVCacheTokens/c.BlockSize)
	}
	return defaultPrefixCacheBlocks
}
