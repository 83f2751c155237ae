package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kneecap/kneecap/record"
)

// TraceWorkload is the workload of a trace replay (DESIGN §3.9): arrival seq of a level is
// request seq mod Len of the trace's window, in pass seq div Len. Its prompt has the recorded
// input length and its max_tokens the recorded output length, with ignore_eos so the server
// generates it. A Mooncake request's hash_ids become blocks of block_tokens tokens, each
// block's text derived from (seed, level, pass, id) alone, so equal ids within a pass of a
// level are identical blocks (a prefix cache sees the trace's sharing) and nothing is shared
// across levels or passes; the last block is cut to the input length. Requests without
// hash_ids (BurstGPT, Azure) and what the blocks leave are unique words (the sized
// synthetic's head of (level, seq), then table words). Lengths are in the server's tokens
// once SizePrompts has sized the workload, in words (one token a word) before.
//
// Next is deterministic in (seed, level, seq) and reads only immutable state.
type TraceWorkload struct {
	trace *Trace
	seed  int64
	// syn is the synthetic workload SizePrompts sizes; z its sized form (words until then).
	syn *Synthetic
	z   *sizedSynthetic
}

// NewTraceWorkload returns the workload replaying t with cfg's seed and sizing; api says how
// requests are sent.
func NewTraceWorkload(cfg WorkloadConfig, api record.API, t *Trace) (*TraceWorkload, error) {
	c := cfg
	c.Dataset, c.Trace, c.PrefixCache, c.Sessions = "", TraceConfig{}, false, nil
	c.InputTokens = Dist{Dist: DistFixed, Mean: math.Max(1, math.Round(t.Info.MeanInputTokens))}
	c.OutputTokens = Dist{Dist: DistFixed, Mean: math.Max(1, math.Round(t.Info.MeanOutputTokens))}
	syn, err := newSynthetic(c, api)
	if err != nil {
		return nil, fmt.Errorf("sweep: trace workload: %w", err)
	}
	z := newSized(syn)
	ones := make([]int, tableSize)
	for i := range ones {
		ones[i] = 1
	}
	z.setExact(1, 1, ones) // words: the first word and every table word one token
	return &TraceWorkload{trace: t, seed: cfg.Seed, syn: syn, z: z}, nil
}

// Trace returns the trace replayed.
func (w *TraceWorkload) Trace() *Trace { return w.trace }

// sized returns w building its prompts with z (a sized form of w.syn).
func (w *TraceWorkload) sized(z *sizedSynthetic) *TraceWorkload {
	c := *w
	c.z = z
	return &c
}

// Next returns arrival seq of level (worker is ignored: a rate level's request is its
// arrival's).
func (w *TraceWorkload) Next(level, _, seq int) record.Request {
	z := w.z
	n := w.trace.Len()
	e := w.trace.entries[seq%n]
	pass := seq / n
	p := sizedPrompt{z: z, tokens: z.base}
	p.b.Grow(len(z.first) + int(float64(e.InputTokens)*z.bytesPerToken) + 16)
	p.b.WriteString(z.first)
	have := float64(z.baseF) // tokens so far (exact: p.tokens)
	now := func() float64 {
		if z.exact {
			return float64(p.tokens)
		}
		return have
	}
	for _, h := range e.HashIDs {
		blk := math.Min(float64(w.trace.block), float64(e.InputTokens)-now())
		if blk < 1 {
			break
		}
		r := rand.New(rand.NewPCG(uint64(w.seed)^0x626c6f636b, splitmix64(splitmix64(uint64(level)<<32|uint64(pass)&0xffffffff)^uint64(h))))
		w.fill(&p, blk, r, false, 0, 0)
		have += blk
	}
	if left := float64(e.InputTokens) - now(); left >= 1 {
		w.fill(&p, left, requestRand(w.seed, level, 0, seq), true, level, seq)
	}
	tokens := p.tokens
	if !z.exact {
		tokens = max(int(e.InputTokens), z.base)
	}
	req := record.Request{Prompt: p.b.String(), PromptTokens: tokens, MaxTokens: int(e.OutputTokens), IgnoreEOS: true}
	return w.syn.models.with(req, level, 0, seq)
}

// fill adds about budget tokens to p (exactly, when the words' costs are known): with unique,
// first the head words of (level, seq), then table words in r's affine order, ending (exact)
// with the words of the largest cost that fits.
func (w *TraceWorkload) fill(p *sizedPrompt, budget float64, r *rand.Rand, unique bool, level, seq int) {
	z := w.z
	a := 2*r.IntN(tableSize/2) + 1
	off := r.IntN(tableSize)
	if z.exact {
		p.left = int(budget)
	} else {
		p.left = max(1, int(math.Round(budget/z.tpw)))
	}
	h, nHead := uint64(0), 0
	if unique {
		h, nHead = z.head(level, 0, seq), headWords
	}
	z.fill(p, h, nHead, a, off, r)
}
