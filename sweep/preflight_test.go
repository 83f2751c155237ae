package sweep_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// TestPreflightWindowCheck: the probe (max_tokens 2) against the fixed-mode simulator (TTFT
// 30 ms, ITL 40 ms) says a 32-token request takes TTFT + 31 × ITL = 1.27 s alone; a real
// request of 32 tokens agrees within 25% (the probe's one gap between tokens is what the
// estimate scales: a few ms of timer jitter on a loaded machine stay under 10% of 40 ms).
// min_requests 100 at concurrency 1 then need 100 × that ≈ 127 s, more than a 3 s
// max_duration: the plan is warned about; at concurrency 64 two rounds (2.5 s) fit.
func TestPreflightWindowCheck(t *testing.T) {
	const ttft, itl = 30 * time.Millisecond, 40 * time.Millisecond
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: ttft, ITL: itl})
	c := newClient(t, url, 2)
	// The estimate scales the probe's one inter-token gap: a gap stretched by a busy machine
	// (a 145 ms gap for 40 ms once under -race) says nothing about the estimator, so the
	// closest of three probes is judged.
	want := ttft + 31*itl
	var pf server.Preflight
	for range 3 {
		p, err := server.RunPreflight(context.Background(), c, sim.DefaultModel, server.PreflightTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if p.OutputTokens != 2 || p.E2E < p.TTFT || p.TTFT < ttft {
			t.Fatalf("probe: %+v", p)
		}
		if pf.E2E == 0 || math.Abs(float64(p.RequestE2E(32)-want)) < math.Abs(float64(pf.RequestE2E(32)-want)) {
			pf = p
		}
	}
	est := pf.RequestE2E(32)
	var rec record.Record
	c.Do(context.Background(), &record.Request{Prompt: "one two three", PromptTokens: 3, MaxTokens: 32, IgnoreEOS: true}, &rec)
	if !rec.OK() || rec.OutputTokens != 32 {
		t.Fatalf("32-token request: %+v", rec)
	}
	for name, d := range map[string]time.Duration{"ground truth TTFT + 31 × ITL": want, "a 32-token request": rec.E2E} {
		if r := float64(est) / float64(d); r < 0.75 || r > 1.25 {
			t.Errorf("estimated E2E %v vs %s %v: ratio %.2f, want within 25%%", est, name, d, r)
		}
	}
	proto := sweep.Protocol{MinRequests: 100, Duration: time.Second, MaxDuration: 3 * time.Second}
	w := pf.CheckWindow(proto.MinRequests, proto.LongestWindow(), []int{4, 1, 2}, 32, 0)
	if w.Fits || w.Concurrency != 1 || w.E2E != est || w.Need != 100*est || w.Max != 3*time.Second {
		t.Errorf("concurrency 1: %+v", w)
	}
	if w := pf.CheckWindow(proto.MinRequests, proto.LongestWindow(), []int{64, 128}, 32, 0); !w.Fits || w.Need != 2*est {
		t.Errorf("concurrency 64: %+v (two rounds of %v fit in 3 s)", w, est)
	}
	proto.MinRequests = 0
	if w := pf.CheckWindow(proto.MinRequests, proto.LongestWindow(), []int{1}, 32, 0); !w.Fits {
		t.Errorf("no min_requests: %+v", w)
	}
}

// TestRequestE2E: the estimate is exact for a probe whose tokens came at a steady pace, adds
// the think time per request, and falls back to the probe's own E2E where it cannot scale.
func TestRequestE2E(t *testing.T) {
	pf := server.Preflight{TTFT: 20 * time.Millisecond, E2E: 25 * time.Millisecond, OutputTokens: 2}
	if got := pf.RequestE2E(64); got != 335*time.Millisecond {
		t.Errorf("RequestE2E(64) = %v, want 20 ms + 63 × 5 ms = 335 ms", got)
	}
	if got := pf.RequestE2E(0); got != pf.E2E {
		t.Errorf("unknown length: %v, want the probe's %v", got, pf.E2E)
	}
	one := server.Preflight{TTFT: 20 * time.Millisecond, E2E: 20 * time.Millisecond, OutputTokens: 1}
	if got := one.RequestE2E(64); got != one.E2E {
		t.Errorf("one-token probe: %v", got)
	}
	w := pf.CheckWindow(100, 3*time.Minute, []int{1}, 64, 100*time.Millisecond)
	if w.Need != 100*435*time.Millisecond || !w.Fits {
		t.Errorf("with think time: %+v, want need 100 × (335 + 100) ms = 43.5 s, which fits in 3 m", w)
	}
}
