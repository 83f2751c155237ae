package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestProfiles(t *testing.T) {
	for _, name := range profiles() {
		c, err := Resolve(Config{Profile: name})
		if err != nil {
			t.Fatalf("Resolve(%s): %v", name, err)
		}
		if c.Model != DefaultModel || c.Seed != 1 {
			t.Errorf("%s: model %q seed %d, want %q and 1", name, c.Model, c.Seed, DefaultModel)
		}
	}
	demo, _ := Profile("demo")
	// The brief's demo numbers: t(32) = 4 ms + 32 × 250 µs = 12 ms → 32 ÷ 12 ms ≈ 2,667 tok/s.
	if got := demo.StepTime(32, 0); got != 12*time.Millisecond {
		t.Errorf("demo t(32) = %v, want 12ms", got)
	}
	if got := demo.IdealTPS(32); math.Abs(got-2666.67) > 0.01 {
		t.Errorf("demo IdealTPS(32) = %g, want 2666.67", got)
	}
	if demo.IdealTPS(64) != demo.IdealTPS(32) {
		t.Errorf("demo plateau not flat beyond S: %g vs %g", demo.IdealTPS(64), demo.IdealTPS(32))
	}
	seed, _ := Profile("seed-article")
	// The article's worked example: E2E = 0.3 s + 99 × 0.05 s = 5.25 s.
	e2e := seed.TTFT + time.Duration(seed.OutputTokens-1)*seed.ITL
	if e2e != 5250*time.Millisecond || seed.Mode != modeFixed || seed.OutputDist != outputFixed {
		t.Errorf("seed-article E2E = %v mode %s dist %s, want 5.25s fixed fixed", e2e, seed.Mode, seed.OutputDist)
	}
	if _, err := Profile("nope"); err == nil {
		t.Error("Profile(nope) succeeded")
	}
}

func TestResolveOverlay(t *testing.T) {
	c, err := Resolve(Config{Profile: "fixed", ITL: 7 * time.Millisecond, MaxNumSeqs: 3, Preemption: true,
		Faults: Faults{StallRate: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != modeFixed || c.ITL != 7*time.Millisecond || c.TTFT != 300*time.Millisecond || c.MaxNumSeqs != 3 || !c.Preemption {
		t.Errorf("overlay wrong: %+v", c)
	}
	if c.Faults.StallDuration != defaultStallDuration {
		t.Errorf("stall duration default = %v, want %v", c.Faults.StallDuration, defaultStallDuration)
	}
	if c.PrefillTPS != 50000 || c.StepBase != 4*time.Millisecond {
		t.Errorf("batching defaults not kept under fixed profile: %+v", c)
	}
	if !strings.Contains(c.String(), "fixed engine") {
		t.Errorf("String() = %q", c.String())
	}
}

func TestValidateReportsAll(t *testing.T) {
	c, _ := Profile("demo")
	c.MaxNumSeqs = 0
	c.PrefillTPS = -1
	c.TokensPerChunk = 0
	c.Faults.ErrorRate = 2
	c.Mode = "warp"
	c.KVCacheTokens = 100
	c.MaxModelLen = 200
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted a bad config")
	}
	for _, want := range []string{"max_num_seqs", "prefill_tps", "tokens_per_chunk", "faults.error_rate", "mode", "max_model_len"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error misses %s: %v", want, err)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 6 {
		t.Errorf("want 6 joined errors, got %v", err)
	}
	if _, err := Resolve(Config{MaxNumSeqs: -1}); err == nil {
		t.Error("Resolve accepted max_num_seqs -1")
	}
}

// TestComputeAndFixedSlotsConfig: compute is sleep by default and spin on request (batching
// only); fixed_slots limits fixed mode only; both show in the banner, and the ground-truth
// helpers follow the slots (4 slots, 100 ms + 31 × 20 ms = 0.72 s: 5.56 requests/s).
func TestComputeAndFixedSlotsConfig(t *testing.T) {
	spin, err := Resolve(Config{Compute: computeSpin, MaxNumSeqs: 4})
	if err != nil || spin.Compute != computeSpin || !strings.Contains(spin.String(), "compute=spin") {
		t.Errorf("spin: %v, %q", err, spin.String())
	}
	if demo, _ := Resolve(Config{}); demo.Compute != computeSleep {
		t.Errorf("default compute %q, want sleep", demo.Compute)
	}
	fixed, err := Resolve(Config{Profile: ProfileFixed, TTFT: 100 * time.Millisecond, ITL: 20 * time.Millisecond, FixedSlots: 4})
	if err != nil || !strings.Contains(fixed.String(), "slots=4") {
		t.Fatalf("fixed slots: %v, %q", err, fixed.String())
	}
	if got := fixed.FixedService(32); got != 720*time.Millisecond {
		t.Errorf("FixedService(32) = %v, want 720ms", got)
	}
	if got := fixed.FixedCapacity(32); math.Abs(got-4/0.72) > 1e-9 {
		t.Errorf("FixedCapacity(32) = %g, want 4 ÷ 0.72 = 5.556", got)
	}
	if got := fixed.IdealTPS(8); got != 4/0.02 {
		t.Errorf("IdealTPS(8) with 4 slots = %g, want 4 ÷ 20 ms = 200", got)
	}
	if unlimited, _ := Resolve(Config{Profile: ProfileFixed}); !math.IsInf(unlimited.FixedCapacity(32), 1) || !strings.Contains(unlimited.String(), "slots=unlimited") {
		t.Errorf("unlimited fixed: capacity %g, %q", unlimited.FixedCapacity(32), unlimited.String())
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Compute: "fast"}, `sim: compute: "fast" is not sleep or spin`},
		{Config{Profile: ProfileFixed, Compute: computeSpin}, "sim: compute: spin needs batching mode"},
		{Config{Profile: ProfileFixed, FixedSlots: -1}, "sim: fixed_slots: -1 must be ≥ 0"},
		{Config{FixedSlots: 4}, "sim: fixed_slots: 4 applies to fixed mode only"},
	} {
		if _, err := Resolve(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
