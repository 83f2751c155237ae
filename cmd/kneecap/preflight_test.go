package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// TestPreflightWindowWarning: before the sweep, a plan whose first level cannot complete
// min_requests within max_duration at the probe's pace is warned about with the window it
// would need. The fixed-mode simulator (TTFT 20 ms, ITL 10 ms) serves 64-token requests in
// 20 ms + 63 × 10 ms = 650 ms alone: min_requests 100 need ≈ 65 s at concurrency 1, more
// than max_duration 2 s; at concurrency 64 two rounds (≈ 1.3 s) fit.
func TestPreflightWindowWarning(t *testing.T) {
	check := func(levels []int) string {
		t.Helper()
		cfg := config.Default()
		cfg.Simulator = sim.Config{Profile: sim.ProfileFixed, TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond}
		cfg.Workload.OutputTokens = sweep.Dist{Dist: sweep.DistFixed, Mean: 64}
		cfg.Sweep.MinRequests, cfg.Sweep.Duration, cfg.Sweep.MaxDuration = 100, time.Second, 2*time.Second
		e, _, stderr := testEnv()
		tg, err := startTarget(e, &cfg, levels)
		if err != nil {
			t.Fatal(err)
		}
		defer tg.close()
		if err := preflight(context.Background(), e, tg, &sweepPrep{cfg: cfg, levels: levels}); err != nil {
			t.Fatalf("preflight: %v\n%s", err, stderr)
		}
		return stderr.String()
	}
	out := check([]int{1, 2, 4})
	for _, want := range []string{
		"kneecap: warning: at concurrency 1 one request takes about ",
		"(64 output tokens at the probe's pace): min_requests 100 need a window of about ",
		"more than max_duration 2s;", "set sweep.max_duration (--max-duration) to at least ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	// The window it names is the estimate's: about 100 × 650 ms, within 25%.
	i := strings.Index(out, "need a window of about ") + len("need a window of about ")
	need, err := time.ParseDuration(strings.TrimSuffix(strings.Fields(out[i:])[0], ","))
	if err != nil || need < 49*time.Second || need > 81*time.Second {
		t.Errorf("needed window %v (%v), want about 65 s:\n%s", need, err, out)
	}
	if out := check([]int{64, 128}); strings.Contains(out, "warning") {
		t.Errorf("concurrency 64 fits: %s", out)
	}
}
