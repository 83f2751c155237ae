package workload

import (
	"context"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kneecap/kneecap/record"
)

func synth(t *testing.T, cfg WorkloadConfig) *Synthetic {
	t.Helper()
	s, err := newSynthetic(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSyntheticExactTokensAndUniquePrefix(t *testing.T) {
	s := synth(t, WorkloadConfig{InputTokens: Dist{Dist: DistUniform, Min: 1, Max: 300},
		OutputTokens: Dist{Dist: DistFixed, Mean: 64}, FixedOutput: true, Seed: 7})
	first := map[string]bool{}
	for seq := range 500 {
		r := s.Next(2, seq%7, seq)
		if got := len(strings.Fields(r.Prompt)); got != r.PromptTokens {
			t.Fatalf("seq %d: %d words, PromptTokens %d", seq, got, r.PromptTokens)
		}
		if r.Prompt != strings.Join(strings.Fields(r.Prompt), " ") {
			t.Fatalf("seq %d: irregular whitespace", seq)
		}
		if r.MaxTokens != 64 || !r.IgnoreEOS {
			t.Fatalf("seq %d: max_tokens %d ignore_eos %v", seq, r.MaxTokens, r.IgnoreEOS)
		}
		w := strings.Fields(r.Prompt)[0]
		if first[w] {
			t.Fatalf("first word %q repeated: prefix not unique", w)
		}
		first[w] = true
	}
}

func TestSyntheticPrefixCacheSharesPrefix(t *testing.T) {
	s := synth(t, WorkloadConfig{InputTokens: Dist{Dist: DistFixed, Mean: 100},
		OutputTokens: Dist{Dist: DistFixed, Mean: 8}, PrefixCache: true, Seed: 1})
	a, b := s.Next(0, 0, 0), s.Next(3, 5, 9)
	wa, wb := strings.Fields(a.Prompt), strings.Fields(b.Prompt)
	if len(wa) != 100 || len(wb) != 100 {
		t.Fatalf("lengths %d %d", len(wa), len(wb))
	}
	if strings.Join(wa[:50], " ") != strings.Join(wb[:50], " ") {
		t.Error("prefix_cache: first 50 words differ")
	}
	if wa[50] == wb[50] || a.Prompt == b.Prompt {
		t.Error("prefix_cache: prompts not unique after the shared prefix")
	}
	if a.IgnoreEOS {
		t.Error("ignore_eos without fixed_output")
	}
}

func TestSyntheticDeterministicConcurrent(t *testing.T) {
	cfg := WorkloadConfig{InputTokens: Dist{Dist: distLognormal, Mean: 200, StdDev: 100},
		OutputTokens: Dist{Dist: distNormal, Mean: 100, StdDev: 30, Min: 10, Max: 150}, Seed: 42}
	s1, s2 := synth(t, cfg), synth(t, cfg)
	const n = 200
	got := make([]record.Request, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				got[i] = s1.Next(1, i%3, i)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if want := s2.Next(1, i%3, i); !reflect.DeepEqual(want, got[i]) {
			t.Fatalf("request %d differs between instances/goroutines", i)
		}
	}
	if reflect.DeepEqual(s1.Next(1, 0, 1), s1.Next(0, 1, 1)) || s1.Next(0, 0, 1).Prompt == s1.Next(0, 1, 0).Prompt {
		t.Error("distinct (level, worker, seq) gave the same request")
	}
	cfg.Seed = 43
	if reflect.DeepEqual(synth(t, cfg).Next(1, 0, 0), s1.Next(1, 0, 0)) {
		t.Error("seed ignored")
	}
}

// TestDistributionMoments checks sample moments against the configured ones. With n = 20000
// draws the standard error of the mean is σ/√n (< 1% of the means here); tolerances are
// about 4 standard errors. Rounding to integers shifts variances by 1/12 (Sheppard), negligible.
func TestDistributionMoments(t *testing.T) {
	const n = 20000
	tests := []struct {
		d              Dist
		mean, sd       float64
		tolMean, tolSD float64
		min, max       int
	}{
		{Dist{Dist: DistFixed, Mean: 128}, 128, 0, 0, 0, 128, 128},
		// uniform on {1..100}: mean 50.5, variance (100²−1)/12.
		{Dist{Dist: DistUniform, Min: 1, Max: 100}, 50.5, math.Sqrt((100*100 - 1) / 12.0), 0.8, 0.6, 1, 100},
		{Dist{Dist: distNormal, Mean: 500, StdDev: 50}, 500, 50, 1.5, 1.5, 1, 1 << 30},
		{Dist{Dist: distLognormal, Mean: 300, StdDev: 150}, 300, 150, 6, 10, 1, 1 << 30},
		// clamped normal stays inside [min, max].
		{Dist{Dist: distNormal, Mean: 100, StdDev: 100, Min: 50, Max: 120}, -1, -1, 0, 0, 50, 120},
	}
	for _, tt := range tests {
		smp := newSampler(tt.d)
		var sum, sum2 float64
		for i := range n {
			x := smp.Draw(requestRand(1, 0, 0, i))
			if x < tt.min || x > tt.max || x < 1 {
				t.Fatalf("%+v: draw %d outside [%d, %d]", tt.d, x, tt.min, tt.max)
			}
			sum += float64(x)
			sum2 += float64(x) * float64(x)
		}
		if tt.mean < 0 {
			continue
		}
		m := sum / n
		sd := math.Sqrt(sum2/n - m*m)
		if math.Abs(m-tt.mean) > tt.tolMean || math.Abs(sd-tt.sd) > tt.tolSD {
			t.Errorf("%+v: mean %.2f sd %.2f, want %.2f±%.1f, %.2f±%.1f", tt.d, m, sd, tt.mean, tt.tolMean, tt.sd, tt.tolSD)
		}
	}
}

func TestWorkloadValidate(t *testing.T) {
	bad := WorkloadConfig{InputTokens: Dist{Dist: "zipf"}, OutputTokens: Dist{Dist: distNormal, Mean: 0},
		ThinkTime: -1}
	errs := bad.Validate()
	if len(errs) != 4 { // input dist, output mean, output stddev, think_time
		t.Fatalf("got %d errors, want 4: %v", len(errs), errs)
	}
	for _, want := range []string{"workload.input_tokens.dist", "workload.output_tokens.mean", "workload.output_tokens.stddev", "workload.think_time"} {
		found := false
		for _, e := range errs {
			found = found || strings.HasPrefix(e.Error(), want)
		}
		if !found {
			t.Errorf("no error for %s in %v", want, errs)
		}
	}
	if _, err := NewWorkload(bad, record.APIChat); err == nil {
		t.Error("NewWorkload accepted an invalid config")
	}
	good := WorkloadConfig{InputTokens: Dist{Dist: DistFixed, Mean: 10}, OutputTokens: Dist{Dist: DistUniform, Min: 1, Max: 5}}
	if errs := good.Validate(); len(errs) != 0 {
		t.Errorf("valid config: %v", errs)
	}
}

// BenchmarkSyntheticNext measures Next of a 512-token synthetic prompt: words (one token a
// word, as before prompt sizing), exact (each vocabulary word's cost counted, the tokenize
// and tokenizer methods) and usage (the calibrated fit).
func BenchmarkSyntheticNext(b *testing.B) {
	cfg := WorkloadConfig{InputTokens: Dist{Dist: DistFixed, Mean: 512}, OutputTokens: Dist{Dist: DistFixed, Mean: 128}, Seed: 1}
	s, err := newSynthetic(cfg, record.APIChat)
	if err != nil {
		b.Fatal(err)
	}
	bench := func(name string, w Workload) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				w.Next(0, i%64, i)
				i++
			}
		})
	}
	bench("words", s)
	for _, opts := range []SizingOptions{
		{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: serverTokens, Templated: true}},
		{Method: record.SizingUsage, Client: &usageClient{template: templateTokens}},
	} {
		opts.API = record.APIChat
		w, _, err := SizePrompts(context.Background(), s, opts)
		if err != nil {
			b.Fatal(err)
		}
		bench(map[string]string{record.SizingTokenize: "exact", record.SizingUsage: "usage"}[opts.Method], w)
	}
}
