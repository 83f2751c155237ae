package workload

import (
	"math"
	"strings"
	"testing"
	"time"
)

// cancelBase is a valid synthetic workload for the cancel tests.
func cancelBase() WorkloadConfig {
	return WorkloadConfig{InputTokens: Dist{Dist: DistFixed, Mean: 16},
		OutputTokens: Dist{Dist: DistFixed, Mean: 64}, FixedOutput: true, Seed: 11}
}

// TestCancelShare: the share of cancelled requests is the fraction within 4 binomial
// standard deviations, every cancelled one carries the drawn point, the requests are the
// uncancelled workload's (same prompts and lengths), and the picks are deterministic.
func TestCancelShare(t *testing.T) {
	cfg := cancelBase()
	plain := synth(t, cfg)
	cfg.Cancel = &CancelConfig{Fraction: 0.2, AfterTokens: &Dist{Dist: DistFixed, Mean: 8}}
	w := WithCancel(plain, cfg)
	const n = 20000
	cancelled := 0
	for seq := range n {
		level, worker := seq%5, seq%13
		r := w.Next(level, worker, seq)
		if p := plain.Next(level, worker, seq); p.Prompt != r.Prompt || p.MaxTokens != r.MaxTokens {
			t.Fatalf("seq %d: the cancel draw changed the request", seq)
		}
		if r.Cancel == nil {
			continue
		}
		cancelled++
		if r.Cancel.AfterTokens != 8 || r.Cancel.After != 0 {
			t.Fatalf("seq %d: cancel %+v, want after 8 tokens", seq, *r.Cancel)
		}
		if again := w.Next(level, worker, seq); again.Cancel == nil || *again.Cancel != *r.Cancel {
			t.Fatalf("seq %d: the pick is not deterministic", seq)
		}
	}
	// Binomial(n, 0.2): σ = √(n·0.2·0.8) ≈ 56.6 requests.
	sigma := math.Sqrt(n * 0.2 * 0.8)
	if d := math.Abs(float64(cancelled) - 0.2*n); d > 4*sigma {
		t.Errorf("%d of %d cancelled, want %g ± %.0f", cancelled, n, 0.2*n, 4*sigma)
	}
}

// TestCancelAfterDuration: an after distribution gives durations, uniform within its bounds.
func TestCancelAfterDuration(t *testing.T) {
	cfg := cancelBase()
	cfg.Cancel = &CancelConfig{Fraction: 1, After: &DurationDist{Dist: DistUniform, Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}}
	w := WithCancel(synth(t, cfg), cfg)
	var sum time.Duration
	const n = 2000
	for seq := range n {
		c := w.Next(0, 0, seq).Cancel
		if c == nil || c.AfterTokens != 0 || c.After < 100*time.Millisecond || c.After > 300*time.Millisecond {
			t.Fatalf("seq %d: cancel %+v, want after in [100ms, 300ms]", seq, c)
		}
		sum += c.After
	}
	// Uniform on [100, 300] ms: mean 200 ms, σ of the mean 57.7 ms ÷ √2000 ≈ 1.3 ms.
	if mean := sum / n; mean < 195*time.Millisecond || mean > 205*time.Millisecond {
		t.Errorf("mean after %v, want 200ms ± 5ms", mean)
	}
}

// TestCancelValidate: each invalid workload.cancel is named by its key.
func TestCancelValidate(t *testing.T) {
	fixed := &Dist{Dist: DistFixed, Mean: 8}
	for _, tc := range []struct {
		name   string
		cancel CancelConfig
		want   string
	}{
		{"fraction 0", CancelConfig{Fraction: 0, AfterTokens: fixed}, "workload.cancel.fraction: is 0"},
		{"fraction over 1", CancelConfig{Fraction: 1.5, AfterTokens: fixed}, "workload.cancel.fraction: is 1.5"},
		{"neither", CancelConfig{Fraction: 0.5}, "workload.cancel: give exactly one"},
		{"both", CancelConfig{Fraction: 0.5, AfterTokens: fixed, After: &DurationDist{Dist: DistFixed, Mean: time.Second}},
			"workload.cancel: give exactly one"},
		{"tokens 0", CancelConfig{Fraction: 0.5, AfterTokens: &Dist{Dist: DistFixed}}, "workload.cancel.after_tokens.mean: is 0"},
		{"after 0", CancelConfig{Fraction: 0.5, After: &DurationDist{Dist: DistFixed}}, "workload.cancel.after.mean: is 0"},
		{"after bad dist", CancelConfig{Fraction: 0.5, After: &DurationDist{Dist: "pareto", Mean: time.Second}}, "workload.cancel.after.dist"},
	} {
		cfg := cancelBase()
		cfg.Cancel = &tc.cancel
		errs := cfg.Validate()
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) {
			t.Errorf("%s: %v, want one problem starting %q", tc.name, errs, tc.want)
		}
	}
	cfg := cancelBase()
	cfg.Cancel = &CancelConfig{Fraction: 0.5, AfterTokens: fixed}
	if errs := cfg.Validate(); len(errs) != 0 {
		t.Errorf("valid cancel: %v", errs)
	}
	cfg.Sessions = &SessionsConfig{Turns: Dist{Dist: DistFixed, Mean: 2}, UserTokens: Dist{Dist: DistFixed, Mean: 8}}
	if errs := cfg.Validate(); len(errs) == 0 || !strings.Contains(errs[len(errs)-1].Error(), "workload.sessions") {
		t.Errorf("cancel with sessions: %v, want it refused", errs)
	}
}
