package workload

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
)

// templateTokens is the chat template of the tests' server (simulator.chat_template_tokens).
const templateTokens = 40

// serverTokens counts as the tests' server does (simulator.tokenizer: subword,
// chat_template_tokens: templateTokens): the simulator's own count of a chat prompt.
var serverTokens = sim.TokenCounter{Tokenizer: sim.TokenizerSubword, TemplateTokens: templateTokens}

// ruleTokens counts by the server's rule without the template: a tokenizer file's count, or
// a part of a prompt's.
var ruleTokens = sim.TokenCounter{Tokenizer: sim.TokenizerSubword}

// countingCounter is a simulator's count that counts its calls.
type countingCounter struct {
	sim.TokenCounter
	calls atomic.Int64
}

func (c *countingCounter) CountTokens(ctx context.Context, text string) (int, error) {
	c.calls.Add(1)
	return c.TokenCounter.CountTokens(ctx, text)
}

// usageClient answers every request with the usage the server would report: the template
// and the subword count (none with omit).
type usageClient struct {
	template int
	omit     bool
	lie      int // usage.prompt_tokens reported whatever the prompt (0: the truth)
	calls    atomic.Int64
}

func (c *usageClient) Do(_ context.Context, req *record.Request, rec *record.Record) {
	c.calls.Add(1)
	rec.Status, rec.OutputTokens, rec.PromptTokens = record.StatusOK, 1, req.PromptTokens
	switch {
	case c.lie != 0:
		rec.PromptTokens = c.lie
	case !c.omit:
		rec.PromptTokens = sim.TokenCounter{Tokenizer: sim.TokenizerSubword, TemplateTokens: c.template}.Count(req.Prompt)
	}
}

func (c *usageClient) Models(context.Context) ([]string, error) { return nil, nil }

// synthCfg is a synthetic workload of the given input distribution and 16 output tokens.
func synthCfg(in Dist) WorkloadConfig {
	return WorkloadConfig{InputTokens: in, OutputTokens: Dist{Dist: DistFixed, Mean: 16}, FixedOutput: true, Seed: 3}
}

func size(t *testing.T, cfg WorkloadConfig, opts SizingOptions) (Workload, record.PromptSizing) {
	t.Helper()
	w, err := NewWorkload(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if opts.API == "" {
		opts.API = record.APIChat
	}
	sw, sz, err := SizePrompts(context.Background(), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sw, sz
}

// TestSizedPromptsHaveTheRequestedLength: with each word's cost counted (a templated counter,
// as vLLM's messages form), every prompt counts exactly its drawn length in the server's
// tokens, template included, from the shortest buildable length up.
func TestSizedPromptsHaveTheRequestedLength(t *testing.T) {
	cfg := synthCfg(Dist{Dist: DistUniform, Min: 1, Max: 1500})
	for _, pc := range []bool{false, true} {
		cfg.PrefixCache = pc
		c := &countingCounter{TokenCounter: serverTokens}
		w, sz := size(t, cfg, SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: c, Source: "fake", Templated: true}})
		z := w.(*sizedSynthetic)
		if !sz.Exact || sz.OverheadTokens != templateTokens || sz.ResidualTokens != 0 || sz.MinPromptTokens != templateTokens+1 {
			t.Fatalf("prefix_cache %v: sizing %+v", pc, sz)
		}
		if got := int(c.calls.Load()); got != sz.Probes || got != 2+tableSize+verifyPrompts {
			t.Errorf("%d counts, %d recorded", got, sz.Probes)
		}
		for seq := range 1000 {
			req := z.Next(1, seq%5, seq)
			n := z.in.Draw(requestRand(cfg.Seed, 1, seq%5, seq))
			got := serverTokens.Count(req.Prompt)
			want := max(n, sz.MinPromptTokens)
			if got != req.PromptTokens || req.PromptTokens != want {
				t.Fatalf("prefix_cache %v, seq %d: drawn %d, PromptTokens %d, the server counts %d", pc, seq, n, req.PromptTokens, got)
			}
			if req.Prompt != strings.Join(strings.Fields(req.Prompt), " ") {
				t.Fatalf("irregular whitespace in %q", req.Prompt)
			}
		}
	}
}

// TestSizedHeadIsUnique: the first word and the head (7 words) differ between any two of
// many requests (without prefix_cache), so no prefix cache can share more than the template
// and the first word; and requests are deterministic.
func TestSizedHeadIsUnique(t *testing.T) {
	w, _ := size(t, synthCfg(Dist{Dist: DistFixed, Mean: 256}), SizingOptions{Method: record.SizingTokenize,
		Endpoint: &Counter{TokenCounter: serverTokens, Templated: true}})
	seen := map[string]string{}
	for level := range 3 {
		for worker := range 40 {
			for seq := range 100 {
				f := strings.Fields(w.Next(level, worker, seq).Prompt)
				head := strings.Join(f[:1+headWords], " ")
				id := fmt.Sprint(level, worker, seq)
				if was, ok := seen[head]; ok {
					t.Fatalf("requests %s and %s start alike: %q", was, id, head)
				}
				seen[head] = id
			}
		}
	}
	// Deterministic in (seed, level, worker, seq): a second sizing, asked concurrently,
	// builds the same requests.
	w2, _ := size(t, synthCfg(Dist{Dist: DistFixed, Mean: 256}), SizingOptions{Method: record.SizingTokenize,
		Endpoint: &Counter{TokenCounter: serverTokens, Templated: true}})
	got := make([]record.Request, 64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(got); i += 4 {
				got[i] = w2.Next(1, i%3, i)
			}
		})
	}
	wg.Wait()
	for i := range got {
		if !reflect.DeepEqual(got[i], w.Next(1, i%3, i)) {
			t.Fatalf("request %d differs between two sizings", i)
		}
	}
}

// TestSizedPrefixCacheSharesHalf: with prefix_cache, prompts of one length share their first
// half (in tokens) and differ after it.
func TestSizedPrefixCacheSharesHalf(t *testing.T) {
	cfg := synthCfg(Dist{Dist: DistFixed, Mean: 600})
	cfg.PrefixCache = true
	w, _ := size(t, cfg, SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: serverTokens, Templated: true}})
	a, b := w.Next(0, 0, 0).Prompt, w.Next(2, 7, 9).Prompt
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if shared := serverTokens.Count(a[:n]); shared < 300-8 || shared > 300 || a == b {
		t.Errorf("the prompts share %d tokens (template included), want ≈ 300 of 600", shared)
	}
}

// TestSizedTemplateFromUsage: a counter that does not see the chat template (a tokenizer
// file, or a prompt-only tokenize form) is corrected by the server's usage on two probes;
// without usage the template is missing and a note says so.
func TestSizedTemplateFromUsage(t *testing.T) {
	cfg := synthCfg(Dist{Dist: DistFixed, Mean: 512})
	client := &usageClient{template: templateTokens}
	w, sz := size(t, cfg, SizingOptions{Method: record.SizingTokenizer, Client: client,
		Tokenizer: &Counter{TokenCounter: ruleTokens, Source: "tokenizer x.json"}})
	if req := w.Next(0, 1, 2); serverTokens.Count(req.Prompt) != 512 || req.PromptTokens != 512 {
		t.Errorf("prompt counts %d, PromptTokens %d, want 512", serverTokens.Count(req.Prompt), req.PromptTokens)
	}
	if client.calls.Load() != 2 || sz.OverheadTokens != templateTokens || len(sz.Notes) != 0 {
		t.Errorf("%d usage probes, sizing %+v", client.calls.Load(), sz)
	}
	_, sz = size(t, cfg, SizingOptions{Method: record.SizingTokenizer, Client: &usageClient{omit: true},
		Tokenizer: &Counter{TokenCounter: ruleTokens, Source: "tokenizer x.json"}})
	if len(sz.Notes) != 1 || !strings.Contains(sz.Notes[0], "chat template is not counted") {
		t.Errorf("without usage: notes %q", sz.Notes)
	}
	// A counter of another model: the usage disagrees differently at two lengths.
	_, sz = size(t, cfg, SizingOptions{Method: record.SizingTokenizer, Client: &usageClient{template: templateTokens},
		Tokenizer: &Counter{TokenCounter: wordCounter{}, Source: "tokenizer other.json"}})
	if len(sz.Notes) == 0 || !strings.Contains(sz.Notes[0], "do not count alike") {
		t.Errorf("another model's tokenizer: notes %q", sz.Notes)
	}
}

// wordCounter counts one token a word.
type wordCounter struct{}

func (wordCounter) CountTokens(_ context.Context, text string) (int, error) {
	return len(strings.Fields(text)), nil
}

// TestUsageCalibration: four probes (the first word and 1–3 passes over the vocabulary) fit
// overhead and tokens per word exactly for an additive server; prompts then have the
// requested length on average: the p50 of 1000 fixed-length prompts within 1% (+1 token),
// each within 3% + 5 tokens (only the head's and the last partial pass's words are drawn: at
// 64 tokens, 14 words of sd 0.47 tokens each give sd 1.8 tokens).
func TestUsageCalibration(t *testing.T) {
	for _, mean := range []float64{64, 512, 4096} {
		client := &usageClient{template: templateTokens}
		w, sz := size(t, synthCfg(Dist{Dist: DistFixed, Mean: mean}), SizingOptions{Method: record.SizingUsage, Client: client})
		z := w.(*sizedSynthetic)
		if client.calls.Load() != 4 || sz.Probes != 4 || sz.ResidualTokens > 1e-9 {
			t.Fatalf("mean %g: %d probes, sizing %+v", mean, client.calls.Load(), sz)
		}
		tableMean := 0.0
		for _, w := range z.words {
			tableMean += float64(ruleTokens.Count(w)) / tableSize
		}
		if math.Abs(sz.TokensPerWord-tableMean) > 1e-9 || math.Abs(sz.OverheadTokens+sz.TokensPerWord-(templateTokens+1)) > 1e-9 {
			t.Fatalf("mean %g: fit %.4f + %.4f × words, want tokens per word %.4f and %d for the first word", mean, sz.OverheadTokens, sz.TokensPerWord, tableMean, templateTokens+1)
		}
		var got []float64
		for seq := range 1000 {
			req := w.Next(0, seq%8, seq)
			n := float64(serverTokens.Count(req.Prompt))
			if math.Abs(n-mean) > 0.03*mean+5 || req.PromptTokens != int(mean) {
				t.Fatalf("mean %g, seq %d: %g tokens (PromptTokens %d)", mean, seq, n, req.PromptTokens)
			}
			got = append(got, n)
		}
		slices.Sort(got)
		if p50 := got[len(got)/2]; math.Abs(p50-mean) > 0.01*mean+1 {
			t.Errorf("mean %g: p50 %g", mean, p50)
		} else {
			t.Logf("mean %g: p50 %g, range %g … %g", mean, p50, got[0], got[len(got)-1])
		}
	}
}

// TestSizingFallsBack: auto takes the tokenizer, else the endpoint, else usage, else words
// with a note; an explicit method that cannot run is an error.
func TestSizingFallsBack(t *testing.T) {
	cfg := synthCfg(Dist{Dist: DistFixed, Mean: 100})
	ep := &Counter{TokenCounter: serverTokens, Source: "endpoint", Templated: true}
	tk := &Counter{TokenCounter: ruleTokens, Source: "file"}
	for _, tt := range []struct {
		name string
		opts SizingOptions
		want string
	}{
		{"tokenizer first", SizingOptions{Endpoint: ep, Tokenizer: tk, Client: &usageClient{template: templateTokens}}, record.SizingTokenizer},
		{"endpoint", SizingOptions{Endpoint: ep, Client: &usageClient{template: templateTokens}}, record.SizingTokenize},
		{"usage", SizingOptions{Client: &usageClient{template: templateTokens}}, record.SizingUsage},
		{"words", SizingOptions{Client: &usageClient{omit: true}}, record.SizingWords},
	} {
		w, sz := size(t, cfg, tt.opts)
		if sz.Method != tt.want {
			t.Errorf("%s: method %s, want %s", tt.name, sz.Method, tt.want)
		}
		if tt.want == record.SizingWords {
			if _, ok := w.(*Synthetic); !ok || len(sz.Notes) != 3 || !strings.Contains(sz.Notes[0], "usage") || !strings.Contains(sz.Notes[1], "no tokenize endpoint") {
				t.Errorf("words: workload %T, notes %q", w, sz.Notes)
			}
		}
	}
	wl, _ := NewWorkload(cfg, record.APIChat)
	for _, m := range []string{record.SizingTokenize, record.SizingTokenizer, record.SizingUsage} {
		if _, _, err := SizePrompts(context.Background(), wl, SizingOptions{Method: m, Client: &usageClient{omit: true}}); err == nil || !strings.Contains(err.Error(), m) {
			t.Errorf("%s without its counter: error %v", m, err)
		}
	}
	if w, sz, err := SizePrompts(context.Background(), wl, SizingOptions{Method: record.SizingWords}); err != nil || w != wl || sz.Method != record.SizingWords {
		t.Errorf("words: %T %+v %v", w, sz, err)
	}
}

// TestSizedDataset: a dataset keeps its texts; a small one has every entry counted, a large
// one a sample and the rest by the fit tokens = a + b × words, recorded.
func TestSizedDataset(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		var b strings.Builder
		pool := wordPool(9, 64)
		for i := range n {
			fmt.Fprintf(&b, "{\"prompt\": %q, \"max_tokens\": 8}\n", strings.Join(pool[:1+i%60], " "))
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, n := range []int{50, 1000} {
		cfg := WorkloadConfig{Dataset: write(fmt.Sprint(n, ".jsonl"), n), Seed: 1}
		w, sz := size(t, cfg, SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: serverTokens, Templated: true}})
		d := w.(*Dataset)
		if sz.Entries != n || sz.Counted != min(n, datasetCounted) || sz.Exact != (n <= datasetCounted) {
			t.Fatalf("%d entries: sizing %+v", n, sz)
		}
		worst := 0
		for _, e := range d.entries {
			worst = max(worst, abs(e.promptTokens-serverTokens.Count(e.prompt)))
		}
		// The fit misses by a word's cost at most: ≤ 2 tokens either way.
		if n <= datasetCounted && worst != 0 || worst > 2 {
			t.Errorf("%d entries: an entry's count is off by %d tokens", n, worst)
		}
		if req := w.Next(0, 0, 0); req.PromptTokens != serverTokens.Count(req.Prompt) && n <= datasetCounted {
			t.Errorf("request PromptTokens %d for %q", req.PromptTokens, req.Prompt)
		}
	}
}

// lumpyCounter counts one token more for a text of more than 100 words: a counter whose
// whole prompts do not count the sum of their words.
type lumpyCounter struct{ sim.TokenCounter }

func (c *lumpyCounter) CountTokens(ctx context.Context, text string) (int, error) {
	n, _ := c.TokenCounter.CountTokens(ctx, text)
	if len(strings.Fields(text)) > 100 {
		n++
	}
	return n, nil
}

// TestSizedCorrectsWholePrompts: when whole prompts count otherwise than the sum of their
// words' costs, the verification says by how much, corrects the overhead, and notes it.
func TestSizedCorrectsWholePrompts(t *testing.T) {
	c := &lumpyCounter{serverTokens}
	w, sz := size(t, synthCfg(Dist{Dist: DistFixed, Mean: 512}), SizingOptions{Method: record.SizingTokenize,
		Endpoint: &Counter{TokenCounter: c, Templated: true}})
	if sz.ResidualTokens != 1 || len(sz.Notes) != 1 || !strings.Contains(sz.Notes[0], "+1 tokens") {
		t.Fatalf("sizing %+v", sz)
	}
	for seq := range 20 {
		req := w.Next(0, 0, seq)
		if n, _ := c.CountTokens(context.Background(), req.Prompt); n != 512 || req.PromptTokens != 512 {
			t.Fatalf("seq %d: counts %d, PromptTokens %d, want 512", seq, n, req.PromptTokens)
		}
	}
}

// TestSizedCompletions: the completions API has no chat template, so a counter that sees no
// template needs no usage: no probe request, no note.
func TestSizedCompletions(t *testing.T) {
	_, sz := size(t, synthCfg(Dist{Dist: DistFixed, Mean: 300}), SizingOptions{Method: record.SizingTokenizer, API: record.APICompletions,
		Tokenizer: &Counter{TokenCounter: ruleTokens, Source: "file"}})
	if len(sz.Notes) != 0 || sz.OverheadTokens != 0 || sz.MinPromptTokens != 1 {
		t.Errorf("sizing %+v", sz)
	}
}

// TestSizingDisbelievesUsage: a usage that lies (a constant, absurd or small, as
// simulator.faults.usage_prompt_tokens plays it) fits no believable rule: usage calibration
// fails (auto falls back to words), and a tokenizer keeps its own counts, with a note.
func TestSizingDisbelievesUsage(t *testing.T) {
	cfg := synthCfg(Dist{Dist: DistFixed, Mean: 512})
	for _, lie := range []int{1, 7, 1_000_000_000_000} {
		_, sz := size(t, cfg, SizingOptions{Client: &usageClient{lie: lie}})
		if sz.Method != record.SizingWords || !strings.Contains(strings.Join(sz.Notes, " "), "not believed") {
			t.Errorf("usage %d: sizing %+v", lie, sz)
		}
		w, sz := size(t, cfg, SizingOptions{Client: &usageClient{lie: lie},
			Tokenizer: &Counter{TokenCounter: serverTokens, Source: "file"}})
		if req := w.Next(0, 0, 0); sz.Method != record.SizingTokenizer || req.PromptTokens != 512 || serverTokens.Count(req.Prompt) != 512 {
			t.Errorf("usage %d, tokenizer: sizing %+v, prompt of %d tokens", lie, sz, serverTokens.Count(req.Prompt))
		}
	}
}
