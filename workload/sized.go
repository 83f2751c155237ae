package workload

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// tableSize is the number of words of the sized vocabulary: the first tableSize words of the
// synthetic word pool. It is a power of two, so a prompt walks the table in a random affine
// order i ↦ (b + a·i) mod tableSize (a odd), which visits every word once in each run of
// tableSize words.
const tableSize = 128

// headWords is the number of table words that make a sized prompt unique to (seed, level,
// worker, seq): the base-128 digits of a bijective 49-bit mix of (level mod 2¹², worker mod
// 2¹⁶, seq mod 2²¹).
const headWords = 7

// mask49 keeps the 49 bits of the head.
const mask49 = 1<<49 - 1

// sizedSynthetic is the synthetic workload sized in the server's tokens (DESIGN §3.6). Every
// prompt is the first word, then (with prefix_cache) the shared words or (with shared_prefix)
// one of the prefixes, drawn after the lengths and the order, then the head (unique
// to the request), then table words in the request's affine order. With the words' costs
// known (exact: each word counted after another), words are added until the drawn length is
// reached exactly, the last ones chosen by cost; otherwise (usage calibration) the number of
// words is (n − base) ÷ tokens_per_word, rounded. Next is deterministic in (seed, level,
// worker, seq) and reads only immutable state.
type sizedSynthetic struct {
	cfg     WorkloadConfig
	models  modelMix
	in, out sampler
	// first is the first word of every prompt; words are the table's words with their
	// leading space.
	first string
	words [tableSize]string
	// exact: cost[i] is the server's tokens of words[i] after another word, base the
	// tokens of a prompt of the first word alone (template included) and firstCost the
	// first word's own tokens (its cost after another word). Otherwise baseF and tpw are
	// the fitted tokens of that prompt and tokens per word (the first word's estimate).
	exact     bool
	cost      [tableSize]int
	maxCost   int
	byCost    [][]uint8
	base      int
	firstCost int
	baseF     float64
	tpw       float64
	// shared is the prefix_cache text: the table words in order, repeated; ends[k] is the
	// end of its first k words and cum[k] their cost (exact).
	shared string
	ends   []int
	cum    []int
	// prefixes are the shared_prefix texts (after the first word) and prefixLen their tokens
	// (exact) or words (estimated): buildPrefixes.
	prefixes  []string
	prefixLen []int
	seedMix   uint64
	// bytesPerToken sizes the builder.
	bytesPerToken float64
}

// firstWord is the first word of every sized prompt: the pool's first word of four bytes
// after the table, so that every other word follows a space and costs what it was counted to.
func firstWord(pool []string) string {
	for _, w := range pool[tableSize:] {
		if len(w) == 4 {
			return w
		}
	}
	return pool[tableSize]
}

// newSized returns the sized form of s, before its costs (exact) or fit (estimated) are set.
func newSized(s *Synthetic) *sizedSynthetic {
	z := &sizedSynthetic{cfg: s.cfg, models: s.cfg.modelMix(), in: s.in, out: s.out, first: firstWord(s.words)}
	z.seedMix = splitmix64(uint64(s.cfg.Seed) ^ 0x68656164)
	for i := range z.words {
		z.words[i] = " " + s.words[i]
	}
	return z
}

// setExact sets the words' costs, the first word's prompt tokens (base, template included)
// and its own (first).
func (z *sizedSynthetic) setExact(base, first int, cost []int) {
	z.exact, z.base, z.firstCost = true, base, first
	z.maxCost = 0
	for i, c := range cost {
		z.cost[i] = c
		z.maxCost = max(z.maxCost, c)
	}
	z.byCost = make([][]uint8, z.maxCost+1)
	sum := 0
	for i, c := range z.cost {
		z.byCost[c] = append(z.byCost[c], uint8(i))
		sum += c
	}
	z.tpw = float64(sum) / tableSize
	z.baseF = float64(base)
	z.finish()
}

// setFit sets the fitted tokens of the first word's prompt and tokens per word.
func (z *sizedSynthetic) setFit(base, tpw float64) {
	z.exact, z.baseF, z.tpw = false, base, tpw
	z.base = int(math.Round(base))
	z.finish()
}

// finish builds the shared prefix (prefix_cache) or prefixes (shared_prefix) and the
// builder's size estimate.
func (z *sizedSynthetic) finish() {
	nb := 0
	for _, w := range z.words {
		nb += len(w)
	}
	z.bytesPerToken = float64(nb) / tableSize / max(z.tpw, 0.25)
	z.buildPrefixes()
	if !z.cfg.PrefixCache {
		return
	}
	maxIn := z.cfg.InputTokens.Max
	if z.cfg.InputTokens.Dist == DistFixed || maxIn <= 0 {
		maxIn = max(z.cfg.InputTokens.Mean+8*z.cfg.InputTokens.StdDev, z.cfg.InputTokens.Mean)
	}
	n := int(math.Ceil(maxIn))/2 + 1
	var b strings.Builder
	z.ends, z.cum = make([]int, n+1), make([]int, n+1)
	for k := 1; k <= n; k++ {
		w := (k - 1) % tableSize
		b.WriteString(z.words[w])
		z.ends[k] = b.Len()
		z.cum[k] = z.cum[k-1] + z.cost[w]
	}
	z.shared = b.String()
}

// head returns the 49-bit head of (level, worker, seq): a bijection of the packed triple.
func (z *sizedSynthetic) head(level, worker, seq int) uint64 {
	v := (uint64(level)&0xfff)<<37 | (uint64(worker)&0xffff)<<21 | uint64(seq)&0x1fffff
	return mixHead(v, z.seedMix, mask49)
}

// messageHeadWords is the number of table words that make a session's user message unique:
// 56 bits, (level, worker, conversation, turn) packed in 12, 16, 18 and 10 bits.
const messageHeadWords = 8

// messageHead returns the 56-bit head of a session's user message: a bijection of the packed
// (level, worker, conv, turn), unique for 2¹⁸ conversations of up to 1024 turns per worker
// and level.
func (z *sizedSynthetic) messageHead(level, worker, conv, turn int) uint64 {
	v := (uint64(level)&0xfff)<<44 | (uint64(worker)&0xffff)<<28 | (uint64(conv)&0x3ffff)<<10 | uint64(turn)&0x3ff
	return mixHead(v, z.seedMix, 1<<56-1)
}

// mixHead is a bijection of the values under mask (a power of two less one), seeded: odd
// multipliers and right xorshifts are bijective modulo a power of two.
func mixHead(v, seed, mask uint64) uint64 {
	v ^= seed & mask
	v = v * 0x9e3779b97f4a7c15 & mask
	v ^= v >> 25
	v = v * 0xbf58476d1ce4e5b9 & mask
	v ^= v >> 23
	return v
}

// sizedPrompt is a prompt being built: left is what remains to add, in tokens (exact) or
// words (estimated), and tokens its length so far (exact).
type sizedPrompt struct {
	b      strings.Builder
	z      *sizedSynthetic
	left   int
	tokens int
}

func (p *sizedPrompt) fits(w int) bool {
	if p.z.exact {
		return p.z.cost[w] <= p.left
	}
	return p.left >= 1
}

func (p *sizedPrompt) put(w int) {
	p.b.WriteString(p.z.words[w])
	if p.z.exact {
		p.left -= p.z.cost[w]
		p.tokens += p.z.cost[w]
	} else {
		p.left--
	}
}

// Next returns the request worker sends as its seq-th request of level.
func (z *sizedSynthetic) Next(level, worker, seq int) record.Request {
	r := requestRand(z.cfg.Seed, level, worker, seq)
	n := z.in.Draw(r)
	out := z.out.Draw(r)
	a := 2*r.IntN(tableSize/2) + 1
	off := r.IntN(tableSize)
	p := sizedPrompt{z: z, tokens: z.base}
	p.b.Grow(len(z.first) + int(float64(n)*z.bytesPerToken) + 16)
	p.b.WriteString(z.first)
	if z.exact {
		p.left = n - z.base
	} else {
		p.left = max(0, int(math.Round((float64(n)-z.baseF)/z.tpw)))
	}
	if z.cfg.PrefixCache {
		z.putShared(&p, n)
	}
	if len(z.prefixes) > 0 {
		z.putPrefix(&p, r.IntN(len(z.prefixes)))
	}
	z.fill(&p, z.head(level, worker, seq), headWords, a, off, r)
	tokens := p.tokens
	if !z.exact {
		tokens = max(n, z.base)
	}
	req := record.Request{Prompt: p.b.String(), PromptTokens: tokens, MaxTokens: out, IgnoreEOS: z.cfg.FixedOutput}
	return z.models.with(req, level, worker, seq)
}

// putShared adds the shared words of a prompt of n tokens: as many as fill its first half.
func (z *sizedSynthetic) putShared(p *sizedPrompt, n int) {
	var k int
	if z.exact {
		budget := n/2 - z.base
		k = sort.Search(len(z.cum), func(i int) bool { return z.cum[i] > budget }) - 1
	} else {
		k = int(math.Round((float64(n)/2 - z.baseF) / z.tpw))
	}
	k = max(0, min(k, len(z.ends)-1))
	if !z.exact {
		k = min(k, p.left)
	}
	p.b.WriteString(z.shared[:z.ends[k]])
	if z.exact {
		p.left -= z.cum[k]
		p.tokens += z.cum[k]
	} else {
		p.left -= k
	}
}

// putTail ends an exact prompt: words of the largest cost that fits, until the length is
// reached (or no word fits: a table without one-token words can fall short by a token).
func (z *sizedSynthetic) putTail(p *sizedPrompt, r *rand.Rand) {
	for p.left > 0 {
		c := min(p.left, z.maxCost)
		for c > 0 && len(z.byCost[c]) == 0 {
			c--
		}
		if c == 0 {
			return
		}
		p.put(int(z.byCost[c][r.IntN(len(z.byCost[c]))]))
	}
}

// probeText is the text of a probe: the first word and m passes over the table in order.
func (z *sizedSynthetic) probeText(m int) string {
	var b strings.Builder
	b.WriteString(z.first)
	for range m {
		for _, w := range z.words {
			b.WriteString(w)
		}
	}
	return b.String()
}
