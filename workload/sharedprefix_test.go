package workload

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// prefixOf returns the index of the prefix prompt starts with (after first), or -1.
func prefixOf(prompt, first string, prefixes []string) int {
	best, at := -1, -1
	for j, p := range prefixes {
		if strings.HasPrefix(prompt, first+p) && len(p) > best {
			best, at = len(p), j
		}
	}
	return at
}

// TestSizedSharedPrefixExact: under exact sizing (the simulator's subword rule, a 40-token
// template counted as vLLM's messages form counts it), the K prefixes are distinct, each
// shared text (the first word and the prefix) counts exactly L tokens, the template not
// counted (DESIGN §3.6), and the whole prompt its drawn length (template included); the draws spread over the K (uniform: each within 4 standard deviations of N/K)
// and are deterministic in (seed, level, worker, seq).
func TestSizedSharedPrefixExact(t *testing.T) {
	const k, l, n = 8, 256, 512
	cfg := synthCfg(Dist{Dist: DistUniform, Min: templateTokens + l + 7*2, Max: 2 * n}) // 7 head words of up to 2 tokens
	cfg.SharedPrefix = SharedPrefix{Count: k, Tokens: l}
	w, _ := size(t, cfg, SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: serverTokens, Templated: true}})
	z := w.(*sizedSynthetic)
	if len(z.prefixes) != k {
		t.Fatalf("%d prefixes, want %d", len(z.prefixes), k)
	}
	seen := map[string]int{}
	for j, p := range z.prefixes {
		if got := ruleTokens.Count(z.first + p); got != l || z.prefixLen[j]+z.firstCost != l {
			t.Errorf("prefix %d counts %d tokens (recorded %d + first word %d), want %d", j, got, z.prefixLen[j], z.firstCost, l)
		}
		if i, dup := seen[p]; dup {
			t.Errorf("prefixes %d and %d are equal", i, j)
		}
		seen[p] = j
	}
	const draws = 4000
	count := make([]int, k)
	for seq := range draws {
		req := w.Next(1, seq%7, seq)
		j := prefixOf(req.Prompt, z.first, z.prefixes)
		if j < 0 {
			t.Fatalf("seq %d: the prompt starts with no prefix: %.80q", seq, req.Prompt)
		}
		count[j]++
		want := z.in.Draw(requestRand(cfg.Seed, 1, seq%7, seq))
		if got := serverTokens.Count(req.Prompt); got != want || req.PromptTokens != want {
			t.Fatalf("seq %d: the server counts %d, PromptTokens %d, drawn %d", seq, got, req.PromptTokens, want)
		}
		if again := w.Next(1, seq%7, seq); again.Prompt != req.Prompt || again.PromptTokens != req.PromptTokens {
			t.Fatalf("seq %d: Next is not deterministic", seq)
		}
	}
	mean := float64(draws) / k
	sd := math.Sqrt(mean * (1 - 1.0/k))
	for j, c := range count {
		if math.Abs(float64(c)-mean) > 4*sd {
			t.Errorf("prefix %d drawn %d times of %d, want %.0f ± %.0f", j, c, draws, mean, 4*sd)
		}
	}
}

// TestSizedSharedPrefixUsage: under usage calibration the shared text is L (template not
// counted) within the fit's rounding (a few words of the table's mean cost, 5%), and the prompts keep their length.
func TestSizedSharedPrefixUsage(t *testing.T) {
	cfg := synthCfg(Dist{Dist: DistFixed, Mean: 512})
	cfg.SharedPrefix = SharedPrefix{Count: 3, Tokens: 256}
	w, _ := size(t, cfg, SizingOptions{Method: record.SizingUsage, Client: &usageClient{template: templateTokens}})
	z := w.(*sizedSynthetic)
	for j, p := range z.prefixes {
		if got := ruleTokens.Count(z.first + p); math.Abs(float64(got-256)) > 0.05*256 {
			t.Errorf("prefix %d counts %d tokens, want 256 ± 5%%", j, got)
		}
	}
	for seq := range 200 {
		req := w.Next(0, 0, seq)
		if prefixOf(req.Prompt, z.first, z.prefixes) < 0 {
			t.Fatalf("seq %d: no prefix", seq)
		}
		if got := serverTokens.Count(req.Prompt); math.Abs(float64(got-512)) > 0.03*512+5 {
			t.Fatalf("seq %d: %d tokens, want 512", seq, got)
		}
	}
}

// TestSyntheticSharedPrefixWords: in words, prompts start with one of K prefixes of L words,
// then the request's unique word; each prompt has its drawn number of words.
func TestSyntheticSharedPrefixWords(t *testing.T) {
	cfg := synthCfg(Dist{Dist: DistFixed, Mean: 100})
	cfg.SharedPrefix = SharedPrefix{Count: 2, Tokens: 40}
	s, err := newSynthetic(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for seq := range 50 {
		req := s.Next(0, 1, seq)
		f := strings.Fields(req.Prompt)
		j := prefixOf(req.Prompt, "", s.prefixes)
		if len(f) != 100 || req.PromptTokens != 100 || j < 0 || len(strings.Fields(s.prefixes[j])) != 40 || !strings.HasPrefix(f[40], "id") {
			t.Fatalf("seq %d: %d words, prefix %d: %.60q", seq, len(f), j, req.Prompt)
		}
		used[j] = true
	}
	if len(used) != 2 || s.prefixes[0] == s.prefixes[1] {
		t.Errorf("prefixes used %v", used)
	}
}

// TestSharedPrefixValidate: the bounds, the keys it cannot be set with, and a prefix not
// shorter than the shortest prompt are errors naming the key.
func TestSharedPrefixValidate(t *testing.T) {
	base := synthCfg(Dist{Dist: DistFixed, Mean: 512})
	for _, tc := range []struct {
		name string
		edit func(*WorkloadConfig)
		want string // "" = valid
	}{
		{"ok", func(w *WorkloadConfig) { w.SharedPrefix = SharedPrefix{1, 256} }, ""},
		{"count", func(w *WorkloadConfig) { w.SharedPrefix = SharedPrefix{0, 256} }, "workload.shared_prefix.count: is 0"},
		{"tokens", func(w *WorkloadConfig) { w.SharedPrefix = SharedPrefix{2, 0} }, "workload.shared_prefix.tokens: is 0"},
		{"too long", func(w *WorkloadConfig) { w.SharedPrefix = SharedPrefix{1, 512} }, "workload.shared_prefix.tokens: is 512: must be below the shortest prompt workload.input_tokens can draw (512)"},
		{"uniform", func(w *WorkloadConfig) {
			w.SharedPrefix, w.InputTokens = SharedPrefix{1, 100}, Dist{Dist: DistUniform, Min: 100, Max: 900}
		}, "must be below the shortest prompt workload.input_tokens can draw (100)"},
		{"normal", func(w *WorkloadConfig) {
			w.SharedPrefix, w.InputTokens = SharedPrefix{1, 100}, Dist{Dist: distNormal, Mean: 512, StdDev: 64}
		}, "set workload.input_tokens.min above 100"},
		{"normal min", func(w *WorkloadConfig) {
			w.SharedPrefix, w.InputTokens = SharedPrefix{1, 100}, Dist{Dist: distNormal, Mean: 512, StdDev: 64, Min: 101}
		}, ""},
		{"both", func(w *WorkloadConfig) { w.SharedPrefix, w.PrefixCache = SharedPrefix{1, 10}, true }, "workload.shared_prefix: and workload.prefix_cache are both set"},
		{"dataset", func(w *WorkloadConfig) { w.SharedPrefix, w.Dataset = SharedPrefix{1, 10}, "x.jsonl" }, "workload.shared_prefix: is not used with workload.dataset"},
		{"sessions", func(w *WorkloadConfig) {
			w.SharedPrefix, w.Sessions = SharedPrefix{1, 10}, &SessionsConfig{Turns: Dist{Dist: DistFixed, Mean: 3}}
		}, "workload.shared_prefix: is not used with workload.sessions"},
		{"trace", func(w *WorkloadConfig) { w.SharedPrefix, w.Trace = SharedPrefix{1, 10}, TraceConfig{File: "t.jsonl"} }, "workload.shared_prefix: is not used with workload.trace"},
		{"memory", func(w *WorkloadConfig) { w.SharedPrefix = SharedPrefix{100_000, 500} }, "more than"},
	} {
		w := base
		tc.edit(&w)
		errs := w.Validate()
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: %v", tc.name, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("%s: got %v, want one error with %q", tc.name, errs, tc.want)
		}
	}
}

// TestSharedPrefixTooShort: a shared text too short for its head words, or a unique part too
// short for the request's, is a sizing error naming the key and the numbers (exact: the
// subword rule's words cost 1 or 2 tokens, the first word 1, the template 40; usage: words).
func TestSharedPrefixTooShort(t *testing.T) {
	exact := SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: serverTokens, Templated: true}}
	usage := SizingOptions{Method: record.SizingUsage, Client: &usageClient{template: templateTokens}}
	for _, tc := range []struct {
		name string
		n, l int
		opts SizingOptions
		want string // "" = sized
	}{
		{"exact ok", 512, 512 - templateTokens - 14, exact, ""},
		{"exact short prefix", 512, 6, exact, "workload.shared_prefix.tokens: is 6: too short for the first word and the 3 words unique to each prefix (up to 1 + 3×2 tokens): set it to at least 7"},
		{"exact prefix 7", 512, 7, exact, ""},
		{"exact short unique", 512, 512 - templateTokens - 13, exact, "workload.shared_prefix.tokens: is 459: the shortest prompt workload.input_tokens can draw (512 tokens) leaves 13 tokens after the chat template (40) and the prefix, fewer than the 7 words unique to each request may need (7×2): set shared_prefix.tokens to at most 458"},
		{"usage short prefix", 512, 2, usage, "workload.shared_prefix.tokens: is 2: too short for the first word and the 3 words unique"},
		{"usage short unique", 512, 465, usage, "and the prefix, fewer than the 7 words unique to each request: set shared_prefix.tokens to at most"},
	} {
		cfg := synthCfg(Dist{Dist: DistFixed, Mean: float64(tc.n)})
		cfg.SharedPrefix = SharedPrefix{Count: 4, Tokens: tc.l}
		s, err := newSynthetic(cfg, record.APIChat)
		if err != nil {
			t.Fatal(err)
		}
		w, _, err := SizePrompts(context.Background(), s, tc.opts)
		if err == nil { // the promises kept at the bounds: K distinct prefixes, distinct prompts
			z, prompts := w.(*sizedSynthetic), map[string]bool{}
			for seq := range 200 {
				prompts[w.Next(0, 0, seq).Prompt] = true
			}
			if len(prompts) != 200 || len(z.prefixes) != 4 || z.prefixes[0] == z.prefixes[1] || z.prefixes[2] == z.prefixes[3] {
				t.Errorf("%s: %d of 200 prompts distinct, prefixes %q", tc.name, len(prompts), z.prefixes)
			}
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
