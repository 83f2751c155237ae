package sim

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestCountTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"   ", 0}, {"hello", 1}, {" hello  world\n", 2}, {"a\u00a0b\u3000c", 3}, {"tok tok tok ", 3},
	} {
		if got := countTokens(tc.in); got != tc.want {
			t.Errorf("CountTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestCountSubwordTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		// ⌈n ÷ 4⌉ per word of n bytes: 1–4 bytes 1 token, 5–8 bytes 2, 9 bytes 3.
		{"", 0}, {"  \n", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"abcdefgh", 2}, {"abcdefghi", 3},
		{"tok tok tok ", 3}, {"hmm ", 1}, {" be  brief\t", 3}, {"é", 1}, {"ééé", 2}, // é is 2 bytes
	} {
		if got := countSubwordTokens(tc.in); got != tc.want {
			t.Errorf("CountSubwordTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
		if got := TokenizerSubword.Count(tc.in); got != tc.want {
			t.Errorf("TokenizerSubword.Count(%q) = %d, want %d", tc.in, got, tc.want)
		}
		if got, want := tokenizerWords.Count(tc.in), len(strings.Fields(tc.in)); got != want {
			t.Errorf("TokenizerWords.Count(%q) = %d, want %d", tc.in, got, want)
		}
	}
}

// FuzzCountTokens checks both rules against their definitions over strings.Fields: the words
// rule is len(strings.Fields(s)), the subword rule Σ ⌈len(word) ÷ 4⌉; and the ids /tokenize
// reports are one per counted token, inside the vocabulary.
func FuzzCountTokens(f *testing.F) {
	for _, s := range []string{"", "a b", " x\ty\n", "\xff\xfe a", "\u2003word\u2003", "abcdefghi jk", "tok tok "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fields := strings.Fields(s)
		if got, want := countTokens(s), len(fields); got != want {
			t.Fatalf("CountTokens(%q) = %d, strings.Fields gives %d", s, got, want)
		}
		want := 0
		for _, w := range fields {
			want += (len(w) + 3) / 4
		}
		if got := countSubwordTokens(s); got != want {
			t.Fatalf("CountSubwordTokens(%q) = %d, Σ ⌈len ÷ 4⌉ over strings.Fields gives %d", s, got, want)
		}
		for _, tk := range tokenizers() {
			ids := tk.appendIDs(nil, s)
			if len(ids) != tk.Count(s) {
				t.Fatalf("%s: %d ids for %d tokens of %q", tk, len(ids), tk.Count(s), s)
			}
			for _, id := range ids {
				if id < 0 || id >= vocabSize {
					t.Fatalf("%s: id %d outside [0, %d)", tk, id, vocabSize)
				}
			}
		}
	})
}

// TestGeometricLength checks the output-length draw against the geometric distribution:
// mean 1/p = 128 and P(n = 1) = p (standard results for the geometric distribution on n ≥ 1).
func TestGeometricLength(t *testing.T) {
	const mean, n = 128, 20000
	sum, ones := 0.0, 0
	for i := range uint64(n) {
		l := outputLength(OutputGeometric, mean, 1, i+1)
		if l < 1 {
			t.Fatalf("length %d < 1", l)
		}
		if l == 1 {
			ones++
		}
		sum += float64(l)
	}
	// Standard error of the mean: sd/√n = √(1−p)/p/√n ≈ 0.9 tokens; allow 4 SE.
	if got := sum / n; math.Abs(got-mean) > 4*0.9 {
		t.Errorf("mean length %.2f, want %d ± 3.6", got, mean)
	}
	if got := float64(ones) / n; math.Abs(got-1.0/mean) > 0.003 {
		t.Errorf("P(n=1) = %.4f, want %.4f", got, 1.0/mean)
	}
	if outputLength(OutputGeometric, mean, 1, 7) != outputLength(OutputGeometric, mean, 1, 7) {
		t.Error("draw not deterministic")
	}
	if outputLength(outputFixed, 100, 1, 3) != 100 {
		t.Error("fixed distribution is not fixed")
	}
}

// FuzzPromptCount: for any request body, the count usage reports (promptTokens) and the ids
// /tokenize answers (promptIDs) agree, under both rules, with and without a template.
func FuzzPromptCount(f *testing.F) {
	for _, s := range []string{`{"prompt":"a bb ccccc"}`, `{"prompt":["x"]}`, `{"prompt":[1,2]}`, `{"prompt":[]}`,
		`{"messages":[{"role":"user","content":"hi there"}]}`, `{"messages":[{"content":[{"type":"text","text":"abcdefghi"}]}]}`,
		`{"messages":[]}`, `{"messages":[{"content":5}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var tr tokenizeRequest
		if json.Unmarshal([]byte(body), &tr) != nil {
			return
		}
		g := genRequest{Messages: tr.Messages, Prompt: tr.Prompt}
		for _, tk := range tokenizers() {
			for _, kind := range []apiKind{apiChat, apiCompletions} {
				c := Config{Tokenizer: tk, ChatTemplateTokens: 3}
				n, errN := c.promptTokens(&g, kind)
				ids, errI := c.promptIDs(&g, kind)
				if (errN == nil) != (errI == nil) || (errN == nil && n != len(ids)) {
					t.Fatalf("%s %d: count %d (%v), %d ids (%v) for %s", tk, kind, n, errN, len(ids), errI, body)
				}
			}
		}
	})
}
