package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// TestProbeProtocolSizesWindows: the probe's windows are the short ones (2 s, 4 s when not
// steady) for a fast server and widen to 3 × the pilot's E2E (6 × when not steady) for a slow
// one, 512 tokens at 12.5 ms (6.4 s a request) getting a 19.2 s window, capped at 60 s; the
// warmup may last 2 × E2E; the sweep's budget is kept.
func TestProbeProtocolSizesWindows(t *testing.T) {
	p := config.Default().Sweep
	p.Stop.Budget = 10 * time.Minute
	for _, tt := range []struct {
		name                        string
		e2e                         time.Duration
		dur, maxDur, warmMaxAtLeast time.Duration
	}{
		{"fast server", 100 * time.Millisecond, 2 * time.Second, 4 * time.Second, 0},
		{"6.4 s a request", 6400 * time.Millisecond, 19200 * time.Millisecond, 38400 * time.Millisecond, 12800 * time.Millisecond},
		{"a minute a request", time.Minute, probeWindowCap, 2 * probeWindowCap, 2 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := probeProtocol(p, tt.e2e)
			if q.Duration != tt.dur || q.MaxDuration != tt.maxDur || q.WarmupMax < tt.warmMaxAtLeast {
				t.Errorf("duration %s, max_duration %s, warmup_max %s: want %s, %s, ≥ %s", q.Duration, q.MaxDuration, q.WarmupMax, tt.dur, tt.maxDur, tt.warmMaxAtLeast)
			}
			if q.Stop.Budget != p.Stop.Budget || !q.Stop.Plateau || q.RateMode() || q.Refine != 0 {
				t.Errorf("stop %+v, mode %q, refine %d: want the budget %s, plateau, closed loop, no levels added", q.Stop, q.Mode, q.Refine, p.Stop.Budget)
			}
		})
	}
}

// TestProbeEstimate: with a valid level the max QPS is the best valid level's completion
// rate; with none valid (too few completions in the windows) it is estimated as output TPS ÷
// mean output tokens (the nominal length when none completed), and Estimate says so; a probe
// that streamed nothing is an error.
func TestProbeEstimate(t *testing.T) {
	lv := func(c int, valid bool, tps, meanOut float64) analysis.Level {
		return analysis.Level{Concurrency: c, Valid: valid, OutputTPS: analysis.Float(tps), MeanOutputTokens: analysis.Float(meanOut),
			QPS: analysis.NaN()}
	}
	nan := math.NaN()
	for _, tt := range []struct {
		name     string
		levels   []analysis.Level
		want     float64
		at       int
		estimate string
	}{
		{"valid levels", []analysis.Level{lv(1, true, 100, 100), lv(2, true, 300, 100), lv(4, false, 900, 100)}, 3, 2, ""},
		{"none valid", []analysis.Level{lv(1, false, 40, 80), lv(2, false, 160, 80), lv(4, false, 120, 80)}, 2, 2, "its mean output tokens"},
		{"none completed", []analysis.Level{lv(1, false, 20, nan), lv(2, false, 50, nan)}, 0.1, 2, "nominal output tokens (none of its requests completed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := probeOf(tt.levels, 500)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.MaxQPS-tt.want) > 1e-9 || p.MaxQPSConcurrency != tt.at || !strings.Contains(p.Estimate, tt.estimate) || (tt.estimate == "") != (p.Estimate == "") {
				t.Errorf("max QPS %g at %d, estimate %q: want %g at %d, estimate %q", p.MaxQPS, p.MaxQPSConcurrency, p.Estimate, tt.want, tt.at, tt.estimate)
			}
		})
	}
	if _, err := probeOf([]analysis.Level{lv(1, false, 0, nan)}, 500); err == nil || !strings.Contains(err.Error(), "no level of 1 was valid or streamed output tokens") {
		t.Errorf("nothing streamed: %v", err)
	}
}

// TestProbeFailedExitCodes: a probe that did not finish is exit 1 (an error, a silent
// server), 130 (interrupted) or 3 only when the server stopped accepting connections.
func TestProbeFailedExitCodes(t *testing.T) {
	for _, tt := range []struct {
		name string
		out  sweep.Outcome
		err  error
		code int
	}{
		{"finished", sweep.Outcome{StopReason: sweep.StopDone}, nil, exitOK},
		{"error", sweep.Outcome{}, errors.New("boom"), exitFailure},
		{"interrupted", sweep.Outcome{Interrupted: true}, nil, exitInterrupted},
		{"unreachable", sweep.Outcome{Unreachable: true, StopReason: "no request connected"}, nil, exitUnreachable},
		{"silent", sweep.Outcome{Silent: true, StopReason: "no answer"}, nil, exitFailure},
	} {
		if got := exitCode(probeFailed(tt.out, tt.err)); got != tt.code {
			t.Errorf("%s: exit %d, want %d", tt.name, got, tt.code)
		}
	}
}

// TestRatesAutoSlowRequests: --rates auto against a server whose request (8 tokens at 25 ms
// + 5 ms a sequence, ≈ 0.27 s) takes longer than the sweep's whole window (max_duration 100
// ms): the probe's windows, sized from the pilot request (3 × its E2E), let its levels
// complete requests, so it finds the simulator's capacity (simCapacity: 11.1 requests/s)
// within 15% from a valid level and plans the rates from it (probe.json).
func TestRatesAutoSlowRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("a probe and a rate sweep")
	}
	c, err := sim.Resolve(sim.Config{MaxNumSeqs: 4, StepBase: 25 * time.Millisecond, StepPerSeq: 5 * time.Millisecond, PrefillTPS: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	truth := simCapacity(c, 16, 8)
	cfgPath := writeTestConfig(t, `name: slow
simulator: {max_num_seqs: 4, step_base: 25ms, step_per_seq: 5ms, prefill_tps: 1000000}
workload:
  input_tokens: {dist: fixed, mean: 16}
  output_tokens: {dist: fixed, mean: 8}
sweep:
  warmup: 50ms
  duration: 50ms
  max_duration: 100ms
  min_requests: 3
  drain_timeout: 1s
  ci_target: 0.3
  stop: {max_unsustainable: 1}
`)
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "--rates", "auto", "-o", dir}); err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", err, stderr)
	}
	p, err := readProbe(dir)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.MaxQPS/truth-1) > 0.15 || p.Estimate != "" {
		if why := probeStarved(p); why != "" {
			t.Skipf("max QPS %.2f (estimate %q) for %.2f: inconclusive, %s", p.MaxQPS, p.Estimate, truth, why)
		}
		t.Errorf("max QPS %.2f (estimate %q), want %.2f ± 15%% from a valid level\nstderr:\n%s", p.MaxQPS, p.Estimate, truth, stderr)
	}
	if e2e := p.PilotE2EMs; !(e2e > 100) || p.WindowS < 3*e2e/1000-1e-9 {
		t.Errorf("pilot E2E %.0f ms, window %.2f s: want a request longer than max_duration 100 ms and a window ≥ 3 × it", e2e, p.WindowS)
	}
	if _, err := os.Stat(filepath.Join(dir, "analysis.json")); err != nil || !strings.Contains(stderr.String(), "windows of ") {
		t.Errorf("analysis.json: %v; stderr:\n%s", err, stderr)
	}
}

// probeStarved says why a probe on this machine proves nothing, or "": the client self-check
// found a probe level client-bound or the machine busy (DESIGN §3.3). The simulator is steady
// by construction, so a level it excluded beside such a level lost its requests to the
// machine, and the max QPS comes from fewer levels.
func probeStarved(p *probe) string {
	for _, l := range p.Levels {
		notes := strings.Join(l.Notes, "; ")
		if l.ClientBound || strings.Contains(notes, "machine busy") {
			return fmt.Sprintf("the client self-check found concurrency %d client-bound or the machine busy (%s)", l.Concurrency, notes)
		}
	}
	return ""
}
