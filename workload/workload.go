package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

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
	// SharedPrefix, when Count > 0, starts every prompt with one of Count shared prefixes
	// ("system prompts") of Tokens tokens, drawn per request (DESIGN §3.6). Not with
	// PrefixCache, nor with a Dataset.
	SharedPrefix SharedPrefix `yaml:"shared_prefix,omitempty"`
	// ThinkTime is the pause of a worker between requests.
	ThinkTime time.Duration `yaml:"think_time"`
	// Seed seeds the workload.
	Seed int64 `yaml:"seed"`
	// PromptSizing says how prompt lengths are made to count in the server's tokens (DESIGN
	// §3.6): auto (empty means auto), tokenize, usage, tokenizer or words (one token per
	// word, the prompts of earlier versions).
	PromptSizing string `yaml:"prompt_sizing"`
	// Trace is a recorded trace to replay, open loop (DESIGN §3.9): its lengths replace
	// input_tokens and output_tokens; empty File means none.
	Trace TraceConfig `yaml:"trace,omitempty"`
	// Tokenizer is a Hugging Face tokenizer.json that counts prompt tokens offline (prompt
	// sizing tokenizer, or auto).
	Tokenizer string `yaml:"tokenizer"`
	// Sessions makes the workload multi-turn conversations (session.go); nil: single
	// requests.
	Sessions *SessionsConfig `yaml:"sessions,omitempty"`
	// Models mixes the models the requests ask for (models.go): each request's model is
	// drawn by weight; empty: every request asks target.model.
	Models []ModelWeight `yaml:"models,omitempty"`
	// Cancel closes a share of the streams early, as users who leave mid-answer do
	// (cancel.go); nil: every stream is read to its end.
	Cancel *CancelConfig `yaml:"cancel,omitempty"`
	// Batch is the number of inputs of each embeddings request (target.api embeddings, each
	// input drawn and sized as a prompt; batch.go); 0 means 1.
	Batch int `yaml:"batch,omitempty"`
}

// Distribution names of Dist.Dist.
const (
	DistFixed     = "fixed"
	DistUniform   = "uniform"
	distNormal    = "normal"
	distLognormal = "lognormal"
)

// Validate reports every problem of the distribution; key prefixes the messages (for example
// "workload.input_tokens"), unit names what it counts in them ("token", "turn").
func (d Dist) Validate(key, unit string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", key, field, fmt.Sprintf(format, args...)))
	}
	switch d.Dist {
	case DistFixed, DistUniform, distNormal, distLognormal:
	default:
		bad(".dist", "%q: must be fixed, uniform, normal or lognormal", d.Dist)
		return errs
	}
	for _, f := range []struct {
		field string
		v     float64
	}{{".mean", d.Mean}, {".min", d.Min}, {".max", d.Max}} {
		if f.v > record.MaxTokens {
			bad(f.field, "is %g: must be ≤ %d %ss (no model's context holds more)", f.v, record.MaxTokens, unit)
		}
	}
	if d.Dist == DistUniform {
		if !(d.Min >= 1) || d.Max < d.Min {
			bad("", "uniform needs 1 ≤ min ≤ max (min %g, max %g)", d.Min, d.Max)
		}
		return errs
	}
	if !(d.Mean >= 1) || math.IsInf(d.Mean, 0) {
		bad(".mean", "is %g: must be ≥ 1 %s", d.Mean, unit)
	}
	if !(d.StdDev >= 0) || math.IsInf(d.StdDev, 0) {
		bad(".stddev", "is %g: must be ≥ 0", d.StdDev)
	}
	if (d.Dist == distNormal || d.Dist == distLognormal) && d.StdDev == 0 {
		bad(".stddev", "%s needs stddev > 0 (use dist: fixed for a constant)", d.Dist)
	}
	if d.Min < 0 || d.Max < 0 || (d.Max > 0 && d.Max < d.Min) {
		bad("", "min %g and max %g: need 0 ≤ min ≤ max (0 = unset)", d.Min, d.Max)
	}
	return errs
}

// Validate reports every problem of the workload configuration at once. It does not open
// the dataset; NewWorkload does.
func (w WorkloadConfig) Validate() []error {
	var errs []error
	errs = append(errs, w.Trace.Validate()...)
	switch {
	case w.Trace.Enabled():
		if w.Dataset != "" {
			errs = append(errs, errors.New("workload.dataset: a trace replay (workload.trace) takes its requests from the trace: give one of them"))
		}
		if w.PrefixCache {
			errs = append(errs, errors.New("workload.prefix_cache: a trace replay's prompts share what the trace shares (Mooncake hash_ids; none in the other formats): remove it"))
		}
		if !w.FixedOutput {
			errs = append(errs, errors.New("workload.fixed_output: false, but a trace replay asks each request's recorded output length with ignore_eos: remove it or set it true"))
		}
	case w.Dataset == "":
		errs = append(errs, w.InputTokens.Validate("workload.input_tokens", "token")...)
		fallthrough
	case w.FixedOutput && w.OutputTokens != (Dist{}):
		errs = append(errs, w.OutputTokens.Validate("workload.output_tokens", "token")...)
	}
	if w.ThinkTime < 0 {
		errs = append(errs, fmt.Errorf("workload.think_time: is %v: must be ≥ 0", w.ThinkTime))
	}
	if w.Sessions != nil {
		if serrs := w.Sessions.validate(w.Dataset != ""); len(serrs) > 0 {
			errs = append(errs, serrs...) // the history's length is of lengths refused already
		} else if err := w.historyProblem(); err != nil {
			errs = append(errs, err)
		}
		if w.PrefixCache {
			errs = append(errs, errors.New("workload.sessions: cannot go with workload.prefix_cache: true (a conversation's turns share its own history; its user messages are unique): remove one of the two"))
		}
	}
	errs = append(errs, w.validateSharedPrefix()...)
	errs = append(errs, validateModels(w.Models)...)
	if w.Cancel != nil {
		errs = append(errs, w.Cancel.validate(w.Sessions != nil)...)
	}
	errs = append(errs, w.validateBatch()...)
	switch w.PromptSizing {
	case "", record.SizingAuto, record.SizingTokenize, record.SizingUsage, record.SizingWords:
		if w.Tokenizer != "" && w.PromptSizing != "" && w.PromptSizing != record.SizingAuto {
			errs = append(errs, fmt.Errorf("workload.tokenizer: is set, but workload.prompt_sizing is %s, which does not read it (use tokenizer or auto, or remove workload.tokenizer)", w.PromptSizing))
		}
	case record.SizingTokenizer:
		if w.Tokenizer == "" {
			errs = append(errs, errors.New("workload.prompt_sizing: tokenizer needs workload.tokenizer (a Hugging Face tokenizer.json)"))
		}
	default:
		errs = append(errs, fmt.Errorf("workload.prompt_sizing: %q: must be auto, tokenize, usage, tokenizer or words", w.PromptSizing))
	}
	return errs
}

// sampler draws token counts from a validated Dist. For lognormal, mu and sigma are the
// parameters of the underlying normal chosen so the lengths themselves have the configured
// mean m and standard deviation s: σ² = ln(1 + s²/m²), μ = ln m − σ²/2.
type sampler struct {
	d         Dist
	mu, sigma float64
}

func newSampler(d Dist) sampler {
	s := sampler{d: d}
	if d.Dist == distLognormal {
		v := math.Log1p(d.StdDev * d.StdDev / (d.Mean * d.Mean))
		s.sigma = math.Sqrt(v)
		s.mu = math.Log(d.Mean) - v/2
	}
	return s
}

// Draw returns a token count ≥ 1, clamped to [Min, Max] where they are set.
func (s sampler) Draw(r *rand.Rand) int {
	var x float64
	switch s.d.Dist {
	case DistUniform:
		lo, hi := int(math.Ceil(s.d.Min)), int(math.Floor(s.d.Max))
		if hi < lo {
			return max(lo, 1)
		}
		return lo + r.IntN(hi-lo+1)
	case distNormal:
		x = s.d.Mean + s.d.StdDev*r.NormFloat64()
	case distLognormal:
		x = math.Exp(s.mu + s.sigma*r.NormFloat64())
	default:
		x = s.d.Mean
	}
	if s.d.Min > 0 {
		x = math.Max(x, s.d.Min)
	}
	if s.d.Max > 0 {
		x = math.Min(x, s.d.Max)
	}
	return max(int(math.Round(x)), 1)
}

// splitmix64 is a bijective 64-bit mixer (Steele, Lea, Flood 2014), used to derive
// independent PCG streams from (seed, level, worker, seq).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// requestHash is the 64-bit key of request (level, worker, seq) of a stream seeded by seed:
// splitmix64 chained over the seed and each number, so distinct requests get unrelated keys.
// A draw of its own (the model's, a cancel's) salts the seed.
func requestHash(seed int64, level, worker, seq int) uint64 {
	h := splitmix64(uint64(seed))
	h = splitmix64(h ^ uint64(level))
	h = splitmix64(h ^ uint64(worker))
	return splitmix64(h ^ uint64(seq))
}

// requestRand returns the PCG generator of one request, seeded from the workload seed and
// the request's key (requestHash).
func requestRand(seed int64, level, worker, seq int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), requestHash(seed, level, worker, seq)))
}

// wordPoolSize is the number of distinct filler words of synthetic prompts.
const wordPoolSize = 4096

// Synthetic is the synthetic workload in words: prompts of exactly the drawn number of
// tokens, where a token is a whitespace-separated word (the simulator's default rule,
// sim.CountTokens; prompt_sizing words). Real tokenizers split differently: SizePrompts gives
// the workload sized in the server's tokens (DESIGN §3.6); the server's usage.prompt_tokens,
// when reported, is what records keep.
//
// Without prefix_cache every prompt starts with a word unique to (seed, level, worker, seq),
// so a server's prefix cache cannot reuse anything. With prefix_cache, a prompt of n tokens
// starts with the first ⌊n/2⌋ words of one fixed seeded text shared by all requests, then the
// unique word, then random words: about half of every prompt is cacheable. With
// shared_prefix, a prompt starts with one of the Count prefixes of Tokens words (drawn after
// the lengths), then the unique word, then random words.
//
// Next is deterministic in (seed, level, worker, seq), allocation-light and lock-free: it
// reads only immutable state built by NewWorkload.
type Synthetic struct {
	cfg    WorkloadConfig
	models modelMix
	api    record.API
	in     sampler
	out    sampler
	words  []string
	shared string // the shared prefix text; shared[:sharedEnd[k]] holds its first k words
	ends   []int
	// prefixes are the shared_prefix texts, of SharedPrefix.Tokens words each.
	prefixes []string
}

// NewWorkload returns the workload cfg describes: a Dataset workload when cfg.Dataset is set,
// else a Synthetic one. api says how requests will be sent (chat or completions); prompt
// token counts are in words until SizePrompts counts them in the server's tokens.
func NewWorkload(cfg WorkloadConfig, api record.API) (Workload, error) {
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("sweep: workload: %w", errors.Join(errs...))
	}
	if cfg.Sessions != nil {
		return newSessions(cfg, api)
	}
	if cfg.Trace.Enabled() {
		t, err := LoadTrace(cfg.Trace)
		if err != nil {
			return nil, err
		}
		return NewTraceWorkload(cfg, api, t)
	}
	if cfg.Dataset != "" {
		return LoadDataset(cfg, api)
	}
	return newSynthetic(cfg, api)
}

// newSynthetic returns the synthetic workload of cfg (cfg.Dataset is ignored).
func newSynthetic(cfg WorkloadConfig, api record.API) (*Synthetic, error) {
	cfg.Dataset, cfg.Trace = "", TraceConfig{}
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("sweep: workload: %w", errors.Join(errs...))
	}
	s := &Synthetic{cfg: cfg, models: cfg.modelMix(), api: api, in: newSampler(cfg.InputTokens), out: newSampler(cfg.OutputTokens)}
	s.words = wordPool(cfg.Seed, wordPoolSize)
	if cfg.SharedPrefix.Count > 0 {
		s.prefixes = wordPrefixes(cfg, s.words)
	}
	if cfg.PrefixCache {
		maxIn := cfg.InputTokens.Max
		if cfg.InputTokens.Dist == DistFixed || maxIn <= 0 {
			maxIn = max(cfg.InputTokens.Mean+8*cfg.InputTokens.StdDev, cfg.InputTokens.Mean)
		}
		n := int(math.Ceil(maxIn))/2 + 1
		r := requestRand(cfg.Seed, -1, -1, -1)
		var b strings.Builder
		s.ends = make([]int, n+1)
		for k := 1; k <= n; k++ {
			if k > 1 {
				b.WriteByte(' ')
			}
			b.WriteString(s.words[r.IntN(len(s.words))])
			s.ends[k] = b.Len()
		}
		s.shared = b.String()
	}
	return s, nil
}

// wordPool builds n distinct lowercase pseudo-words of 2–4 syllables from the seed.
func wordPool(seed int64, n int) []string {
	const cons, vows = "bcdfghjklmnprstvz", "aeiou"
	r := rand.New(rand.NewPCG(uint64(seed), 0x776f7264706f6f6c))
	seen := make(map[string]bool, n)
	words := make([]string, 0, n)
	var b []byte
	for len(words) < n {
		b = b[:0]
		for range 2 + r.IntN(3) {
			b = append(b, cons[r.IntN(len(cons))], vows[r.IntN(len(vows))])
		}
		if w := string(b); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// Next returns the request worker sends as its seq-th request of level.
func (s *Synthetic) Next(level, worker, seq int) record.Request {
	r := requestRand(s.cfg.Seed, level, worker, seq)
	n := s.in.Draw(r)
	out := s.out.Draw(r)
	var b strings.Builder
	b.Grow(n * 8)
	k := 0
	if s.cfg.PrefixCache {
		k = min(n/2, len(s.ends)-1)
		b.WriteString(s.shared[:s.ends[k]])
	}
	if len(s.prefixes) > 0 {
		k = s.cfg.SharedPrefix.Tokens // below n: WorkloadConfig.Validate
		b.WriteString(s.prefixes[r.IntN(len(s.prefixes))])
	}
	if k > 0 {
		b.WriteByte(' ')
	}
	// The unique word: one token with no whitespace.
	b.WriteString("id")
	b.WriteString(strconv.FormatUint(splitmix64(uint64(s.cfg.Seed))&0xffff, 36))
	b.WriteByte('-')
	b.WriteString(strconv.Itoa(level))
	b.WriteByte('-')
	b.WriteString(strconv.Itoa(worker))
	b.WriteByte('-')
	b.WriteString(strconv.Itoa(seq))
	for i := k + 1; i < n; i++ {
		b.WriteByte(' ')
		b.WriteString(s.words[r.IntN(len(s.words))])
	}
	req := record.Request{Prompt: b.String(), PromptTokens: n, MaxTokens: out}
	req.IgnoreEOS = s.cfg.FixedOutput
	return s.models.with(req, level, worker, seq)
}
