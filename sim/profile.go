package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
)

// Output-length distributions (Config.OutputDist).
const (
	// OutputGeometric ends a sequence after each token with probability 1/OutputTokens.
	OutputGeometric = "geometric"
	// outputFixed generates exactly OutputTokens tokens.
	outputFixed = "fixed"
)

// Profile names (Config.Profile).
const (
	ProfileDemo        = "demo"
	ProfileFixed       = "fixed"
	ProfileSeedArticle = "seed-article"
)

// DefaultModel is the model name the simulator serves unless configured otherwise.
const DefaultModel = "kneecap-sim"

// defaultBlockSize is vLLM's KV block size in tokens.
const defaultBlockSize = 16

// defaultStallDuration is the stall length when stall_rate is set without stall_duration.
const defaultStallDuration = time.Second

// profiles lists the preset names accepted by Profile.
func profiles() []string {
	return []string{ProfileDemo, ProfileFixed, ProfileSeedArticle}
}

// demoConfig is the demo preset; the other presets start from it so that every field has a
// usable value whichever mode is chosen later.
func demoConfig() Config {
	return Config{
		Profile:          ProfileDemo,
		Mode:             modeBatching,
		Model:            DefaultModel,
		MaxNumSeqs:       32,
		Compute:          computeSleep,
		KVCacheTokens:    0,
		PrefillTPS:       50000,
		MaxBatchedTokens: 8192,
		StepBase:         4 * time.Millisecond,
		StepPerSeq:       250 * time.Microsecond,
		TTFT:             300 * time.Millisecond,
		ITL:              20 * time.Millisecond,
		OutputTokens:     128,
		OutputDist:       OutputGeometric,
		TokensPerChunk:   1,
		Tokenizer:        tokenizerWords,
		BlockSize:        defaultBlockSize,
		Seed:             1,
	}
}

// Profile returns the named preset:
//
//   - demo: continuous batching with 32 slots, step time 4 ms + 250 µs per sequence
//     (t(32) = 12 ms, so output throughput plateaus at 32 ÷ 12 ms ≈ 2,667 tokens/s from
//     concurrency 32), prefill 50,000 tokens/s chunked at 8,192 tokens, unlimited KV cache,
//     geometric output lengths with mean 128 tokens.
//   - fixed: every request gets TTFT 300 ms, then one token every 20 ms, exactly 128 tokens
//     unless max_tokens says otherwise, with unlimited slots: it never saturates.
//   - seed-article: fixed mode with TTFT 300 ms, ITL 50 ms and 100 output tokens, the worked
//     example of the article kneecap grew from: E2E = 0.3 s + 99 × 0.05 s = 5.25 s.
func Profile(name string) (Config, error) {
	c := demoConfig()
	switch name {
	case ProfileDemo, "":
		return c, nil
	case ProfileFixed, ProfileSeedArticle:
		c.Profile, c.Mode, c.OutputDist = name, modeFixed, outputFixed
		c.TTFT, c.ITL = 300*time.Millisecond, 20*time.Millisecond
		if name == ProfileSeedArticle {
			c.ITL, c.OutputTokens = 50*time.Millisecond, 100
		}
		return c, nil
	}
	return Config{}, fmt.Errorf("sim: unknown profile %q (want one of %s)", name, strings.Join(profiles(), ", "))
}

// Resolve returns the configuration the engine runs: the preset named by c.Profile (demo when
// empty), overlaid with every non-zero field of c, with defaults filled in, and validated.
// A zero field cannot switch a preset value off; set the resolved Config's field directly
// for that (kneecap sim does so for its flags).
func Resolve(c Config) (Config, error) {
	r, err := Profile(c.Profile)
	if err != nil {
		return Config{}, err
	}
	over(&r.Mode, c.Mode)
	over(&r.Model, c.Model)
	over(&r.MaxNumSeqs, c.MaxNumSeqs)
	over(&r.Compute, c.Compute)
	over(&r.KVCacheTokens, c.KVCacheTokens)
	over(&r.MaxModelLen, c.MaxModelLen)
	over(&r.PrefillTPS, c.PrefillTPS)
	over(&r.MaxBatchedTokens, c.MaxBatchedTokens)
	over(&r.StepBase, c.StepBase)
	over(&r.StepPerSeq, c.StepPerSeq)
	over(&r.StepPerKVToken, c.StepPerKVToken)
	over(&r.Preemption, c.Preemption)
	over(&r.TTFT, c.TTFT)
	over(&r.ITL, c.ITL)
	over(&r.FixedSlots, c.FixedSlots)
	over(&r.OutputTokens, c.OutputTokens)
	over(&r.OutputDist, c.OutputDist)
	over(&r.TokensPerChunk, c.TokensPerChunk)
	over(&r.Tokenizer, c.Tokenizer)
	over(&r.ChatTemplateTokens, c.ChatTemplateTokens)
	over(&r.ReasoningTokens, c.ReasoningTokens)
	over(&r.CloseAfterStream, c.CloseAfterStream)
	over(&r.PrefixCaching, c.PrefixCaching)
	over(&r.BlockSize, c.BlockSize)
	over(&r.PrefixCacheBlocks, c.PrefixCacheBlocks)
	over(&r.GPUs, c.GPUs)
	over(&r.Power.IdleW, c.Power.IdleW)
	over(&r.Power.MaxW, c.Power.MaxW)
	over(&r.Embed.Batch, c.Embed.Batch)
	over(&r.Embed.StepBase, c.Embed.StepBase)
	over(&r.Embed.PerToken, c.Embed.PerToken)
	over(&r.Embed.Dimension, c.Embed.Dimension)
	over(&r.Faults.ErrorRate, c.Faults.ErrorRate)
	over(&r.Faults.DisconnectRate, c.Faults.DisconnectRate)
	over(&r.Faults.QueueLimit429, c.Faults.QueueLimit429)
	over(&r.Faults.RetryAfter, c.Faults.RetryAfter)
	over(&r.Faults.StallRate, c.Faults.StallRate)
	over(&r.Faults.StallDuration, c.Faults.StallDuration)
	if c.Faults.UsagePromptTokens != nil {
		r.Faults.UsagePromptTokens = ptr(*c.Faults.UsagePromptTokens)
	}
	if c.Faults.UsageCompletionTokens != nil {
		r.Faults.UsageCompletionTokens = ptr(*c.Faults.UsageCompletionTokens)
	}
	over(&r.Faults.OmitUsage, c.Faults.OmitUsage)
	over(&r.Seed, c.Seed)
	if len(c.Adapters) > 0 {
		r.Adapters = append([]Adapter(nil), c.Adapters...)
	}
	r.fillDefaults()
	if err := r.Validate(); err != nil {
		return Config{}, err
	}
	return r, nil
}

// fillDefaults sets values that depend on other fields.
func (c *Config) fillDefaults() {
	if c.Faults.StallRate > 0 && c.Faults.StallDuration == 0 {
		c.Faults.StallDuration = defaultStallDuration
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.GPUs > 0 && c.Power == (Power{}) {
		c.Power = Power{IdleW: DefaultIdleW, MaxW: DefaultMaxW}
	}
}

// over overlays v on *dst unless v is its type's zero value (Resolve's rule: a zero field
// keeps the preset's value).
func over[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// Validate reports every problem of a resolved configuration at once (errors.Join), each as
// "sim: FIELD: problem".
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("sim: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	// atLeast1, nonNegative and nonNegativeDur check a setting's lower bound; zero says what
	// 0 means.
	atLeast1 := func(field string, v int) {
		if v < 1 {
			bad(field, "%d must be at least 1", v)
		}
	}
	nonNegative := func(field string, v int, zero string) {
		if v < 0 {
			bad(field, "%d must be ≥ 0 (0 = %s)", v, zero)
		}
	}
	nonNegativeDur := func(field string, v time.Duration) {
		if v < 0 {
			bad(field, "%v must be ≥ 0", v)
		}
	}
	switch c.Profile {
	case "", ProfileDemo, ProfileFixed, ProfileSeedArticle:
	default:
		bad("profile", "unknown profile %q (want one of %s)", c.Profile, strings.Join(profiles(), ", "))
	}
	switch c.Mode {
	case modeBatching, modeFixed:
	default:
		bad("mode", "%q is not batching or fixed", c.Mode)
	}
	if strings.TrimSpace(c.Model) == "" {
		bad("model", "must not be empty")
	} else if strings.ContainsFunc(c.Model, unicode.IsControl) {
		bad("model", "%q has a control character", c.Model)
	}
	c.validateAdapters(bad)
	atLeast1("max_num_seqs", c.MaxNumSeqs)
	switch c.Compute {
	case computeSleep:
	case computeSpin:
		if c.Mode == modeFixed {
			bad("compute", "spin needs batching mode: fixed mode has no engine steps to burn (its timers stand for a server's own clock)")
		}
	default:
		bad("compute", "%q is not sleep or spin", c.Compute)
	}
	nonNegative("kv_cache_tokens", c.KVCacheTokens, "unlimited")
	nonNegative("max_model_len", c.MaxModelLen, "unlimited")
	if c.KVCacheTokens > 0 && c.MaxModelLen > c.KVCacheTokens {
		bad("max_model_len", "%d exceeds kv_cache_tokens %d: a request of full length could never run", c.MaxModelLen, c.KVCacheTokens)
	}
	if !(c.PrefillTPS > 0) || math.IsInf(c.PrefillTPS, 0) {
		bad("prefill_tps", "%g must be a positive finite number of tokens per second", c.PrefillTPS)
	}
	atLeast1("max_batched_tokens", c.MaxBatchedTokens)
	nonNegativeDur("step_base", c.StepBase)
	nonNegativeDur("step_per_seq", c.StepPerSeq)
	nonNegativeDur("step_per_kv_token", c.StepPerKVToken)
	if c.Mode == modeBatching && c.StepBase+c.StepPerSeq <= 0 {
		bad("step_base", "step_base + step_per_seq must be positive in batching mode")
	}
	nonNegativeDur("ttft", c.TTFT)
	if c.ITL < 0 || (c.Mode == modeFixed && c.ITL == 0) {
		bad("itl", "%v must be positive", c.ITL)
	}
	if c.FixedSlots < 0 {
		bad("fixed_slots", "%d must be ≥ 0 (0 = unlimited)", c.FixedSlots)
	} else if c.FixedSlots > 0 && c.Mode != modeFixed {
		bad("fixed_slots", "%d applies to fixed mode only: batching mode's slots are max_num_seqs", c.FixedSlots)
	}
	atLeast1("output_tokens", c.OutputTokens)
	switch c.OutputDist {
	case OutputGeometric, outputFixed:
	default:
		bad("output_dist", "%q is not geometric or fixed", c.OutputDist)
	}
	atLeast1("tokens_per_chunk", c.TokensPerChunk)
	switch c.Tokenizer {
	case tokenizerWords, TokenizerSubword:
	default:
		bad("tokenizer", "%q is not words or subword", c.Tokenizer)
	}
	nonNegative("chat_template_tokens", c.ChatTemplateTokens, "no template")
	nonNegative("reasoning_tokens", c.ReasoningTokens, "no reasoning")
	atLeast1("block_size", c.BlockSize)
	nonNegative("prefix_cache_blocks", c.PrefixCacheBlocks, "kv_cache_tokens ÷ block_size, or 65536 with an unlimited cache")
	if c.GPUs < 0 || c.GPUs > maxGPUs {
		bad("gpus", "%d must be in [0, %d] (0 = no GPU telemetry)", c.GPUs, maxGPUs)
	}
	if !(c.Power.IdleW >= 0) || math.IsInf(c.Power.IdleW, 0) {
		bad("power.idle_w", "%g must be a finite number of watts ≥ 0", c.Power.IdleW)
	}
	if !(c.Power.MaxW >= c.Power.IdleW) || math.IsInf(c.Power.MaxW, 0) {
		bad("power.max_w", "%g must be a finite number of watts ≥ power.idle_w (%g)", c.Power.MaxW, c.Power.IdleW)
	}
	rate := func(name string, v float64) {
		if !(v >= 0 && v <= 1) {
			bad("faults."+name, "%g is not a probability in [0, 1]", v)
		}
	}
	rate("error_rate", c.Faults.ErrorRate)
	rate("disconnect_rate", c.Faults.DisconnectRate)
	rate("stall_rate", c.Faults.StallRate)
	nonNegative("faults.queue_limit_429", c.Faults.QueueLimit429, "disabled")
	if c.Faults.RetryAfter < 0 {
		bad("faults.retry_after", "%v must be ≥ 0 (0 = no Retry-After)", c.Faults.RetryAfter)
	}
	if c.Faults.StallDuration < 0 || (c.Faults.StallRate > 0 && c.Faults.StallDuration == 0) {
		bad("faults.stall_duration", "%v must be positive when stall_rate is set", c.Faults.StallDuration)
	}
	if c.Faults.OmitUsage && (c.Faults.UsagePromptTokens != nil || c.Faults.UsageCompletionTokens != nil) {
		bad("faults.omit_usage", "omits the usage that faults.usage_prompt_tokens or faults.usage_completion_tokens would report: set one or the other")
	}
	errs = append(errs, c.Embed.validate())
	return errors.Join(errs...)
}

// StepTime is the duration of one decode step with batch running sequences and kvTokens KV
// tokens in use: step_base + step_per_seq × batch + step_per_kv_token × kvTokens. Prefill
// time is added by the engine on top of this.
func (c Config) StepTime(batch, kvTokens int) time.Duration {
	return c.StepBase + time.Duration(batch)*c.StepPerSeq + time.Duration(kvTokens)*c.StepPerKVToken
}

// IdealTPS is the ground-truth output throughput in tokens per second at the given
// concurrency when prefill and KV-dependent costs are negligible: c ÷ t(c) for c ≤ S and
// S ÷ t(S) beyond (batching mode), min(c, fixed_slots) ÷ ITL in fixed mode (ignoring TTFT;
// c ÷ ITL with unlimited slots).
func (c Config) IdealTPS(concurrency int) float64 {
	if concurrency <= 0 {
		return 0
	}
	if c.Mode == modeFixed {
		if c.ITL <= 0 {
			return 0
		}
		if c.FixedSlots > 0 {
			concurrency = min(concurrency, c.FixedSlots)
		}
		return float64(concurrency) / c.ITL.Seconds()
	}
	b := min(concurrency, c.MaxNumSeqs)
	t := c.StepTime(b, 0)
	if t <= 0 {
		return 0
	}
	return float64(b) / t.Seconds()
}

// FixedService is how long a fixed-mode request of n output tokens holds its slot:
// TTFT + (n − 1) × ITL, its first token TTFT after admission and one more every ITL.
func (c Config) FixedService(n int) time.Duration {
	return c.TTFT + time.Duration(max(n-1, 0))*c.ITL
}

// FixedCapacity is the ground-truth capacity of fixed mode in requests per second for
// requests of n output tokens: fixed_slots ÷ FixedService(n) (4 slots, TTFT 100 ms, ITL
// 20 ms, 32 tokens: 4 ÷ 0.72 s = 5.56 requests/s); +Inf with unlimited slots.
func (c Config) FixedCapacity(n int) float64 {
	if c.FixedSlots <= 0 {
		return math.Inf(1)
	}
	return float64(c.FixedSlots) / c.FixedService(n).Seconds()
}

// String describes the engine in one line, for logs and the `kneecap sim` banner.
func (c Config) String() string {
	if c.Mode == modeFixed {
		slots := "unlimited"
		if c.FixedSlots > 0 {
			slots = fmt.Sprint(c.FixedSlots)
		}
		return fmt.Sprintf("fixed engine: model=%s ttft=%v itl=%v slots=%s output_tokens=%d (%s, when a request sets no max_tokens) tokens_per_chunk=%d seed=%d%s",
			bannerName(c.Model), c.TTFT, c.ITL, slots, c.OutputTokens, c.OutputDist, c.TokensPerChunk, c.Seed, c.realString()+c.adaptersString()+c.faultString()+c.Embed.String())
	}
	kv := "unlimited"
	if c.KVCacheTokens > 0 {
		kv = fmt.Sprintf("%d tokens", c.KVCacheTokens)
	}
	mml := "unlimited"
	if c.MaxModelLen > 0 {
		mml = fmt.Sprint(c.MaxModelLen)
	}
	step := fmt.Sprintf("%v + %v×b", c.StepBase, c.StepPerSeq)
	if c.StepPerKVToken > 0 {
		step += fmt.Sprintf(" + %v×kv", c.StepPerKVToken)
	}
	return fmt.Sprintf("batching engine: model=%s max_num_seqs=%d compute=%s step=%s (t(%d)=%v, plateau %.0f tok/s from c=%d) prefill=%.0f tok/s chunk=%d kv=%s preemption=%t max_model_len=%s output_tokens=%d (%s, when a request sets no max_tokens) tokens_per_chunk=%d seed=%d%s",
		bannerName(c.Model), c.MaxNumSeqs, c.Compute, step, c.MaxNumSeqs, c.StepTime(c.MaxNumSeqs, 0), c.IdealTPS(c.MaxNumSeqs), c.MaxNumSeqs,
		c.PrefillTPS, c.MaxBatchedTokens, kv, c.Preemption, mml, c.OutputTokens, c.OutputDist, c.TokensPerChunk, c.Seed, c.realString()+c.adaptersString()+c.faultString()+c.Embed.String())
}

// realString names the real-engine behaviours that differ from the defaults (" tokenizer=subword
// chat_template_tokens=40 close_after_stream") and the simulated GPUs (" gpus=1
// power=120–700W (÷32 slots)"), or "".
func (c Config) realString() string {
	var b strings.Builder
	if c.Tokenizer != "" && c.Tokenizer != tokenizerWords {
		fmt.Fprintf(&b, " tokenizer=%s", c.Tokenizer)
	}
	if c.ChatTemplateTokens != 0 {
		fmt.Fprintf(&b, " chat_template_tokens=%d", c.ChatTemplateTokens)
	}
	if c.ReasoningTokens != 0 {
		fmt.Fprintf(&b, " reasoning_tokens=%d", c.ReasoningTokens)
	}
	if c.CloseAfterStream {
		b.WriteString(" close_after_stream")
	}
	if c.PrefixCaching && c.Mode == modeBatching {
		fmt.Fprintf(&b, " prefix_caching(block_size=%d blocks=%d)", c.BlockSize, c.PrefixCacheCapacity())
	}
	if c.GPUs > 0 {
		fmt.Fprintf(&b, " gpus=%d power=%g–%gW (÷%d slots)", c.GPUs, c.Power.IdleW, c.Power.MaxW, c.PowerSlots())
	}
	return b.String()
}

func (c Config) faultString() string {
	f := c.Faults
	var parts []string
	if f.ErrorRate != 0 || f.DisconnectRate != 0 || f.QueueLimit429 != 0 || f.StallRate != 0 || f.StallDuration != 0 {
		parts = append(parts, fmt.Sprintf("error_rate=%g disconnect_rate=%g queue_limit_429=%d stall_rate=%g stall_duration=%v",
			f.ErrorRate, f.DisconnectRate, f.QueueLimit429, f.StallRate, f.StallDuration))
	}
	if f.RetryAfter > 0 {
		parts = append(parts, fmt.Sprintf("retry_after=%v", f.RetryAfter))
	}
	if f.UsagePromptTokens != nil {
		parts = append(parts, fmt.Sprintf("usage_prompt_tokens=%d", *f.UsagePromptTokens))
	}
	if f.UsageCompletionTokens != nil {
		parts = append(parts, fmt.Sprintf("usage_completion_tokens=%d", *f.UsageCompletionTokens))
	}
	if f.OmitUsage {
		parts = append(parts, "omit_usage")
	}
	if len(parts) == 0 {
		return ""
	}
	return " faults={" + strings.Join(parts, " ") + "}"
}
