package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// SharedPrefix is workload.shared_prefix: Count distinct shared prefixes ("system prompts")
// of Tokens tokens each; every request starts with one of them, drawn uniformly from its
// own seeded generator, and continues with its unique part (DESIGN §3.6). Tokens counts the
// shared text alone, in the server's tokens (words under prompt_sizing words), as "a system
// prompt of L tokens" does in vLLM's and SGLang's benchmarks: the run the server sees
// repeated is the chat template's opening and those Tokens tokens. The prompt's total stays
// the drawn input_tokens, template included. The zero value (Count 0) is off.
type SharedPrefix struct {
	// Count is the number of distinct prefixes, K.
	Count int `yaml:"count"`
	// Tokens is the length of each prefix, L, in tokens.
	Tokens int `yaml:"tokens"`
}

// Bounds of workload.shared_prefix: the prefixes are built once and kept in memory.
const (
	// maxSharedPrefixes is the most prefixes shared_prefix.count may ask for.
	maxSharedPrefixes = 100_000
	// maxSharedPrefixTokens is the most tokens all prefixes together may hold (count ×
	// tokens): about 6 bytes a token in memory.
	maxSharedPrefixTokens = 16 << 20
)

// prefixSeq is the level and seq under which prefix j's generator is seeded (requestRand(seed,
// prefixSeq, j, prefixSeq)): no level or seq of a request is negative.
const prefixSeq = -2

// validateSharedPrefix reports the problems of w.SharedPrefix: its bounds, the keys it cannot
// be set with, and a prefix not shorter than the shortest prompt input_tokens can draw.
func (w WorkloadConfig) validateSharedPrefix() []error {
	sp := w.SharedPrefix
	if sp == (SharedPrefix{}) {
		return nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("workload.shared_prefix%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if sp.Count < 1 || sp.Count > maxSharedPrefixes {
		bad(".count", "is %d: must be in [1, %d]", sp.Count, maxSharedPrefixes)
	}
	if sp.Tokens < 1 {
		bad(".tokens", "is %d: must be ≥ 1", sp.Tokens)
	} else if sp.Count >= 1 && int64(sp.Count)*int64(sp.Tokens) > maxSharedPrefixTokens {
		bad("", "count %d × tokens %d is more than %d tokens of prefixes", sp.Count, sp.Tokens, maxSharedPrefixTokens)
	}
	if w.PrefixCache {
		bad("", "and workload.prefix_cache are both set: choose one (prefix_cache shares half of every prompt, shared_prefix starts each with one of count prefixes of tokens tokens)")
	}
	if w.Trace.Enabled() {
		bad("", "is not used with workload.trace (a trace's hash_ids give its shared prefixes): remove one of the two")
		return errs
	}
	if w.Sessions != nil {
		bad("", "is not used with workload.sessions (a conversation's history is its shared prefix): remove one of the two")
		return errs
	}
	if w.Dataset != "" {
		bad("", "is not used with workload.dataset (a dataset's prompts are sent as they are): remove one of the two")
		return errs
	}
	if lo, ok := w.InputTokens.lowerBound(); !ok {
		bad(".tokens", "%d needs a shortest prompt: workload.input_tokens (%s) can draw any length down to 1; set workload.input_tokens.min above %d", sp.Tokens, w.InputTokens.Dist, sp.Tokens)
	} else if sp.Tokens >= lo {
		bad(".tokens", "is %d: must be below the shortest prompt workload.input_tokens can draw (%d), so every request has a unique part after the prefix", sp.Tokens, lo)
	}
	return errs
}

// lowerBound returns the shortest length d can draw, and whether d has one above 1 that
// the configuration states: fixed (its value), uniform (min), normal and lognormal (min, when
// set). It assumes d is valid.
func (d Dist) lowerBound() (int, bool) {
	switch d.Dist {
	case DistFixed:
		return newSampler(d).Draw(nil), true // a fixed draw reads no randomness
	case DistUniform:
		return max(int(math.Ceil(d.Min)), 1), true
	}
	if d.Min > 0 {
		return max(int(math.Round(d.Min)), 1), true
	}
	return 1, false
}

// wordPrefixes returns the prefixes of shared_prefix in words (prompt_sizing words): prefix j
// is a word unique to j, then Tokens−1 words of the pool drawn from j's generator.
func wordPrefixes(cfg WorkloadConfig, pool []string) []string {
	sp := cfg.SharedPrefix
	out := make([]string, sp.Count)
	for j := range out {
		r := requestRand(cfg.Seed, prefixSeq, j, prefixSeq)
		var b strings.Builder
		b.WriteString("sys")
		b.WriteString(strconv.Itoa(j))
		for range sp.Tokens - 1 {
			b.WriteByte(' ')
			b.WriteString(pool[r.IntN(len(pool))])
		}
		out[j] = b.String()
	}
	return out
}

// prefixHeadWords is the number of table words that make a sized prefix unique to its index:
// the base-128 digits of a bijective 21-bit mix of it (maxSharedPrefixes < 2²¹).
const prefixHeadWords = 3

// prefixHead returns the 21-bit head of prefix j: a bijection of j mod 2²¹.
func (z *sizedSynthetic) prefixHead(j int) uint64 {
	const mask21 = 1<<21 - 1
	v := (uint64(j) ^ z.seedMix) & mask21
	v = v * 0x9e3779b97f4a7c15 & mask21
	v ^= v >> 11
	v = v * 0xbf58476d1ce4e5b9 & mask21
	return v ^ v>>9
}

// buildPrefixes builds the sized prefixes of shared_prefix (after the costs or the fit are
// set): prefix j is the text after the first word, its head (unique to j), then table words
// in j's affine order until the shared text (the first word and the prefix, the template
// not counted) counts Tokens tokens: exactly (exact, the tail chosen by cost like a
// prompt's) or round(Tokens ÷ tokens_per_word) words with the first (estimated).
// checkSharedPrefix refuses a Tokens too short for the head.
func (z *sizedSynthetic) buildPrefixes() {
	sp := z.cfg.SharedPrefix
	z.prefixes, z.prefixLen = nil, nil
	if sp.Count == 0 {
		return
	}
	z.prefixes, z.prefixLen = make([]string, sp.Count), make([]int, sp.Count)
	for j := range z.prefixes {
		r := requestRand(z.cfg.Seed, prefixSeq, j, prefixSeq)
		a, off := 2*r.IntN(tableSize/2)+1, r.IntN(tableSize)
		p := sizedPrompt{z: z, left: z.prefixBody()}
		words := p.left
		z.fill(&p, z.prefixHead(j), prefixHeadWords, a, off, r)
		z.prefixes[j] = p.b.String()
		if z.exact {
			z.prefixLen[j] = p.tokens
		} else {
			z.prefixLen[j] = words - p.left
		}
	}
}

// prefixBody is what a prefix holds after the first word: Tokens less the first word's
// tokens (exact), or round(Tokens ÷ tokens_per_word) − 1 words (estimated).
func (z *sizedSynthetic) prefixBody() int {
	l := z.cfg.SharedPrefix.Tokens
	if z.exact {
		return l - z.firstCost
	}
	return max(0, int(math.Round(float64(l)/z.tpw))-1)
}

// checkSharedPrefix reports a shared_prefix the sized prompts cannot keep its promises with
// (DESIGN §3.6): a prefix too short to hold the first word and its prefixHeadWords unique
// words, or a shortest prompt whose unique part after the template's opening and the prefix
// cannot hold the request's headWords unique words. Exact sizing counts a word at up to the
// vocabulary's largest cost; usage calibration counts words.
func (z *sizedSynthetic) checkSharedPrefix() error {
	sp := z.cfg.SharedPrefix
	lo, ok := z.cfg.InputTokens.lowerBound()
	if sp.Count == 0 || !ok {
		return nil
	}
	body := z.prefixBody()
	if z.exact && body < prefixHeadWords*z.maxCost {
		return fmt.Errorf("workload.shared_prefix.tokens: is %d: too short for the first word and the %d words unique to each prefix (up to %d + %d×%d tokens): set it to at least %d",
			sp.Tokens, prefixHeadWords, z.firstCost, prefixHeadWords, z.maxCost, z.firstCost+prefixHeadWords*z.maxCost)
	}
	if !z.exact && body < prefixHeadWords {
		return fmt.Errorf("workload.shared_prefix.tokens: is %d: too short for the first word and the %d words unique to each prefix (%d words of %.3g tokens): set it to at least %d",
			sp.Tokens, prefixHeadWords, 1+prefixHeadWords, z.tpw, int(math.Ceil((float64(prefixHeadWords)+0.5)*z.tpw)))
	}
	over := z.overheadTokens()
	if z.exact {
		if unique := lo - over - sp.Tokens; unique < headWords*z.maxCost {
			return fmt.Errorf("workload.shared_prefix.tokens: is %d: the shortest prompt workload.input_tokens can draw (%d tokens) leaves %d tokens after the chat template (%d) and the prefix, fewer than the %d words unique to each request may need (%d×%d): set shared_prefix.tokens to at most %d or raise workload.input_tokens",
				sp.Tokens, lo, unique, over, headWords, headWords, z.maxCost, lo-over-headWords*z.maxCost)
		}
		return nil
	}
	if unique := int(math.Round((float64(lo)-z.baseF)/z.tpw)) - body; unique < headWords {
		return fmt.Errorf("workload.shared_prefix.tokens: is %d: the shortest prompt workload.input_tokens can draw (%d tokens) leaves %d words after the chat template (%d tokens) and the prefix, fewer than the %d words unique to each request: set shared_prefix.tokens to at most %d or raise workload.input_tokens",
			sp.Tokens, lo, unique, over, headWords, sp.Tokens-int(math.Ceil(float64(headWords-unique)*z.tpw)))
	}
	return nil
}

// overheadTokens is what the server adds to a prompt, in tokens: the chat template.
func (z *sizedSynthetic) overheadTokens() int {
	if z.exact {
		return z.base - z.firstCost
	}
	return int(math.Round(z.baseF - z.tpw))
}

// putPrefix adds prefix j to p: its text, and its tokens (exact) or words (estimated).
func (z *sizedSynthetic) putPrefix(p *sizedPrompt, j int) {
	p.b.WriteString(z.prefixes[j])
	p.left -= z.prefixLen[j]
	if z.exact {
		p.tokens += z.prefixLen[j]
	}
}

// fill adds to p the first nHead words of head h (7 bits each) while they fit, then table
// words in the affine order (off + a·i) mod tableSize while more than the largest cost
// remains (exact) or any word (estimated), then (exact) the tail of words chosen by cost.
func (z *sizedSynthetic) fill(p *sizedPrompt, h uint64, nHead, a, off int, r *rand.Rand) {
	for range nHead {
		w := int(h & (tableSize - 1))
		h >>= 7
		if p.left <= 0 || !p.fits(w) {
			break
		}
		p.put(w)
	}
	stop := 0
	if z.exact {
		stop = z.maxCost
	}
	for i := 0; p.left > stop; i++ {
		p.put((off + a*i) & (tableSize - 1))
	}
	if z.exact {
		z.putTail(p, r)
	}
}
