package launch

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/workload"
)

// TestPreflightWindowWarning: before the sweep, a plan whose first level cannot complete
// min_requests within max_duration at the probe's pace is warned about with the window it
// would need. The fixed-mode simulator (TTFT 30 ms, ITL 40 ms) serves 32-token requests in
// 30 ms + 31 × 40 ms = 1.27 s alone: min_requests 100 need ≈ 127 s at concurrency 1, more
// than max_duration 3 s; at concurrency 64 two rounds (≈ 2.5 s) fit.
func TestPreflightWindowWarning(t *testing.T) {
	check := func(levels []int) string {
		t.Helper()
		cfg := config.Default()
		cfg.Simulator = sim.Config{Profile: sim.ProfileFixed, TTFT: 30 * time.Millisecond, ITL: 40 * time.Millisecond}
		cfg.Workload.OutputTokens = workload.Dist{Dist: workload.DistFixed, Mean: 32}
		cfg.Sweep.MinRequests, cfg.Sweep.Duration, cfg.Sweep.MaxDuration = 100, time.Second, 3*time.Second
		var stderr bytes.Buffer
		s := &Sweep{Env: Env{Log: &stderr, Getenv: func(string) string { return "" }}, Cfg: cfg, Levels: levels}
		tg, err := s.startTarget()
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		if _, err := s.preflight(context.Background(), tg); err != nil {
			t.Fatalf("preflight: %v\n%s", err, stderr.String())
		}
		return stderr.String()
	}
	s0 := selfcheck.SampleClient()
	out := check([]int{1, 2, 4})
	// The estimate scales the probe's one gap between tokens: on a machine that held the
	// client back (the self-check's heuristics over the probe) that gap says nothing.
	busy := selfcheck.MachineBusy(selfcheck.SampleClient().Since(s0))
	for _, want := range []string{
		"kneecap: warning: at concurrency 1 one request takes about ",
		"(32 output tokens at the probe's pace): min_requests 100 need a window of about ",
		"more than max_duration 3s;", "set sweep.max_duration (--max-duration) to at least ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	// The window it names is the estimate's: about 100 × 1.27 s, within 25% (the probe's one
	// gap between tokens is what the estimate scales; timer jitter stays well under 40 ms).
	i := strings.Index(out, "need a window of about ") + len("need a window of about ")
	need, err := time.ParseDuration(strings.TrimSuffix(strings.Fields(out[i:])[0], ","))
	if err != nil || need < 95*time.Second || need > 159*time.Second {
		if len(busy) > 0 {
			t.Skipf("needed window %v for about 127 s: inconclusive, the client self-check found the machine busy (%s)", need, strings.Join(busy, ", "))
		}
		t.Errorf("needed window %v (%v), want about 127 s:\n%s", need, err, out)
	}
	if out := check([]int{64, 128}); strings.Contains(out, "warning") {
		t.Errorf("concurrency 64 fits: %s", out)
	}
}

// TestExpectsPrefixCache: a sweep a prefix cache serves (shared_prefix, sessions, the
// simulator with prefix_caching) shows the hit column from its first level; another does not.
func TestExpectsPrefixCache(t *testing.T) {
	cfg := config.Default()
	if expectsPrefixCache(&cfg, nil) {
		t.Errorf("the default config expects a prefix cache")
	}
	for _, edit := range []func(*config.Config){
		func(c *config.Config) { c.Workload.SharedPrefix = workload.SharedPrefix{Count: 1, Tokens: 64} },
		func(c *config.Config) { c.Workload.Sessions = &workload.SessionsConfig{} },
		func(c *config.Config) { c.Simulator.PrefixCaching = true },
	} {
		c := config.Default()
		edit(&c)
		if !expectsPrefixCache(&c, nil) {
			t.Errorf("%+v does not expect a prefix cache", c.Workload)
		}
	}
}
