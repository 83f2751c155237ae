package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// maxWordCost bounds the tokens of one word of the sized vocabulary (at most 8 bytes): more
// is not believed.
const maxWordCost = 16

// verifyPrompts is the number of synthetic prompts an exact sizing counts whole to check
// that the words' costs add up.
const verifyPrompts = 3

// usagePasses are the probes of usage calibration: the first word and 0 … 3 passes over the
// table (1, 129, 257 and 385 words). A pass holds every table word once, so the fit measures
// the table's mean cost without sampling noise.
var usagePasses = []int{0, 1, 2, 3}

// sizeSynthetic sizes s by method.
func sizeSynthetic(ctx context.Context, s *Synthetic, method string, opts SizingOptions) (Workload, record.PromptSizing, error) {
	z := newSized(s)
	if method == record.SizingUsage {
		return sizeSyntheticUsage(ctx, z, opts)
	}
	c, err := counterFor(method, opts)
	if err != nil {
		return nil, record.PromptSizing{}, err
	}
	texts := make([]string, 0, 2+tableSize)
	texts = append(texts, z.first, z.first+" "+z.first)
	for _, w := range z.words {
		texts = append(texts, z.first+w)
	}
	counts, err := countAll(ctx, c, texts)
	if err != nil {
		return nil, record.PromptSizing{}, fmt.Errorf("%s: %w", c.Source, err)
	}
	base := counts[0]
	cost := make([]int, tableSize)
	for i := range cost {
		if cost[i] = counts[2+i] - base; cost[i] <= 0 || cost[i] > maxWordCost {
			return nil, record.PromptSizing{}, fmt.Errorf("%s counts %q as %d tokens and %q as %d: a word must add 1 to %d tokens",
				c.Source, texts[0], base, texts[2+i], counts[2+i], maxWordCost)
		}
	}
	sz := record.PromptSizing{Method: method, Source: c.Source, Exact: true, Probes: len(texts), MaxModelLen: c.MaxModelLen}
	delta, probes, notes := templateDelta(ctx, z, c, opts)
	sz.Probes += probes
	sz.Notes = append(sz.Notes, notes...)
	base += delta
	z.setExact(base, counts[1]-counts[0], cost)
	worst, mean, err := z.verify(ctx, c, delta)
	if err != nil {
		return nil, record.PromptSizing{}, fmt.Errorf("%s: %w", c.Source, err)
	}
	sz.Probes += verifyPrompts
	sz.ResidualTokens = float64(worst)
	if fix := int(math.Round(mean)); fix != 0 {
		sz.Notes = append(sz.Notes, fmt.Sprintf("whole prompts counted %+d tokens from the sum of their words' costs (the counter is not additive over words): corrected", fix))
		z.setExact(base+fix, counts[1]-counts[0], cost)
	}
	sz.TokensPerWord = z.tpw
	sz.OverheadTokens = float64(z.base - (counts[1] - counts[0]))
	sz.MinPromptTokens = z.base
	return z, sz, nil
}

// templateDelta measures what the server counts that c does not (a chat template, special
// tokens): usage.prompt_tokens − c's count on two probes. It returns 0 with a note when the
// server reports no usage, and notes a difference that is not the same on both probes (the
// counter does not count as the server does).
func templateDelta(ctx context.Context, z *sizedSynthetic, c *Counter, opts SizingOptions) (delta, probes int, notes []string) {
	unknown := func(why string) []string {
		if c.Templated || opts.API == record.APICompletions || opts.API == record.APIEmbeddings {
			return nil
		}
		return []string{fmt.Sprintf("%s: the chat template is not counted (%s)", c.Source, why)}
	}
	if opts.Client == nil {
		return 0, 0, unknown("no probe requests")
	}
	var d, words []int
	for _, m := range []int{1, 2} {
		text := z.probeText(m)
		u, err := usageCount(ctx, opts.Client, text)
		probes++
		if err != nil {
			if len(d) == 0 {
				return 0, probes, unknown(err.Error())
			}
			break
		}
		k, err := c.CountTokens(ctx, text)
		probes++
		if err != nil {
			return 0, probes, append(unknown(err.Error()), fmt.Sprintf("%s: %v", c.Source, err))
		}
		d = append(d, u-k)
		words = append(words, 1+m*tableSize)
	}
	delta = d[0]
	if slices.ContainsFunc(d, func(x int) bool { return x < -words[0] || x > maxOverhead }) {
		return 0, probes, append(unknown("usage not believed"), fmt.Sprintf("the server's usage differs from %s by %v tokens: not believed", c.Source, d))
	}
	if len(d) == 2 && d[0] != d[1] {
		notes = append(notes, fmt.Sprintf("the server's usage counts %+d tokens more than %s at %d words, %+d at %d words: they do not count alike (a tokenizer of another model?)",
			d[0], c.Source, words[0], d[1], words[1]))
		delta = int(math.Round(float64(d[0]+d[1]) / 2))
	}
	if c.Templated && delta != 0 {
		notes = append(notes, fmt.Sprintf("the server's usage counts %+d tokens more than %s: corrected", delta, c.Source))
	}
	return delta, probes, notes
}

// verify counts verifyPrompts of z's prompts whole (plus delta) and returns the largest and
// the mean difference from the length each was built to.
func (z *sizedSynthetic) verify(ctx context.Context, c TokenCounter, delta int) (worst int, mean float64, err error) {
	texts := make([]string, verifyPrompts)
	want := make([]int, verifyPrompts)
	for j := range texts {
		req := z.Next(-1, j, 0)
		texts[j], want[j] = req.Prompt, req.PromptTokens
	}
	got, err := countAll(ctx, c, texts)
	if err != nil {
		return 0, 0, err
	}
	for j := range got {
		e := got[j] + delta - want[j]
		worst = max(worst, abs(e))
		mean += float64(e) / verifyPrompts
	}
	return worst, mean, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// minTokensPerWord bounds the fitted tokens per word from below: a word is a token or more
// in every tokenizer that splits at spaces, and a flat usage is not believed.
const minTokensPerWord = 0.5

// sizeSyntheticUsage fits usage.prompt_tokens = a + b × words to the usage probes; a probe
// the server refuses (a context limit) is left out as long as two answer.
func sizeSyntheticUsage(ctx context.Context, z *sizedSynthetic, opts SizingOptions) (Workload, record.PromptSizing, error) {
	var xs, ys []float64
	var refused []string
	for _, m := range usagePasses {
		text := z.probeText(m)
		u, err := usageCount(ctx, opts.Client, text)
		if err != nil {
			if errors.Is(err, errNoUsage) || m == 0 || ctx.Err() != nil {
				return nil, record.PromptSizing{}, err
			}
			refused = append(refused, err.Error())
			continue
		}
		xs = append(xs, float64(1+m*tableSize))
		ys = append(ys, float64(u))
	}
	a, b, rms, ok := fitLine(xs, ys)
	if !ok {
		return nil, record.PromptSizing{}, fmt.Errorf("fewer than two probe requests answered with a usable count (%s)", strings.Join(refused, "; "))
	}
	if !(b >= minTokensPerWord && b <= maxWordCost) {
		return nil, record.PromptSizing{}, fmt.Errorf("usage.prompt_tokens grows by %.3g tokens a word over %v words (%v tokens): not believed", b, xs, ys)
	}
	z.setFit(a+b, b)
	sz := record.PromptSizing{Method: record.SizingUsage, Source: fmt.Sprintf("usage.prompt_tokens of %d probe requests", len(xs)),
		TokensPerWord: b, OverheadTokens: a, ResidualTokens: rms, Probes: len(xs) + len(refused), MinPromptTokens: z.base}
	for _, r := range refused {
		sz.Notes = append(sz.Notes, "left out of the fit: "+r)
	}
	return z, sz, nil
}

// Dataset sizing: how many entries are counted one by one (the others by the fit).
const (
	datasetCounted = 128
	datasetProbes  = 6
)

// sizeDataset counts d's entries in the server's tokens by method: a sample (every entry of
// a small dataset) one by one, the rest by the fit tokens = a + b × words over the sample.
func sizeDataset(ctx context.Context, d *Dataset, method string, opts SizingOptions) (Workload, record.PromptSizing, error) {
	limit := datasetCounted
	if method == record.SizingUsage {
		limit = datasetProbes
	}
	idx := sampleIndices(len(d.entries), limit)
	texts := make([]string, len(idx))
	for j, i := range idx {
		texts[j] = d.entries[i].prompt
	}
	sz := record.PromptSizing{Method: method, Entries: len(d.entries), Counted: len(idx)}
	var counts []int
	if method == record.SizingUsage {
		sz.Source = fmt.Sprintf("usage.prompt_tokens of %d probe requests", len(idx))
		counts = make([]int, len(texts))
		for j, t := range texts {
			var err error
			if counts[j], err = usageCount(ctx, opts.Client, t); err != nil {
				return nil, record.PromptSizing{}, err
			}
		}
		sz.Probes = len(texts)
	} else {
		c, err := counterFor(method, opts)
		if err != nil {
			return nil, record.PromptSizing{}, err
		}
		sz.Source, sz.MaxModelLen = c.Source, c.MaxModelLen
		if counts, err = countAll(ctx, c, texts); err != nil {
			return nil, record.PromptSizing{}, fmt.Errorf("%s: %w", c.Source, err)
		}
		z := newSized(&Synthetic{cfg: d.cfg, words: wordPool(d.cfg.Seed, tableSize+64)})
		delta, probes, notes := templateDelta(ctx, z, c, opts)
		for j := range counts {
			counts[j] += delta
		}
		sz.Probes = len(texts) + probes
		sz.Notes = notes
	}
	return d.sized(idx, counts, &sz), sz, nil
}

// sized returns a copy of d whose entries count in the server's tokens: the entries idx by
// counts, the others by the fit over them, which sz records.
func (d *Dataset) sized(idx, counts []int, sz *record.PromptSizing) *Dataset {
	xs, ys := make([]float64, len(idx)), make([]float64, len(idx))
	var sw, sc float64
	for j, i := range idx {
		xs[j], ys[j] = float64(d.entries[i].words), float64(counts[j])
		sw += xs[j]
		sc += ys[j]
	}
	a, b, rms, ok := fitLine(xs, ys)
	if !ok {
		a, b, rms = 0, sc/sw, 0
	}
	sz.TokensPerWord, sz.OverheadTokens, sz.ResidualTokens = b, a, rms
	// Replayed as sessions, every turn's message is sized by the fit's slope (the entries were
	// counted whole, template and all): not exact.
	sz.Exact = len(idx) == len(d.entries) && d.cfg.Sessions == nil
	out := *d
	out.tokensPerWord = b
	out.entries = make([]datasetEntry, len(d.entries))
	copy(out.entries, d.entries)
	for i := range out.entries {
		e := &out.entries[i]
		e.promptTokens = max(1, int(math.Round(a+b*float64(e.words))))
	}
	for j, i := range idx {
		out.entries[i].promptTokens = counts[j]
	}
	for i := range out.entries {
		// Session turns: each message by the slope alone (the template, a, is counted once
		// per request: Sessions.Overhead).
		e := &out.entries[i]
		if len(e.turns) == 0 {
			continue
		}
		e.turns = slices.Clone(e.turns)
		for k := range e.turns {
			e.turns[k].promptTokens = max(1, int(math.Round(b*float64(e.turns[k].words))))
		}
	}
	return &out
}

// sampleIndices returns min(n, k) indices spread evenly over [0, n).
func sampleIndices(n, k int) []int {
	k = min(n, k)
	out := make([]int, k)
	for j := range out {
		out[j] = j * n / k
	}
	return out
}
