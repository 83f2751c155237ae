package main

// The sweep's flags as they reach its configuration (sweepConfig), without sweeping.

import (
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
)

// sweepConfigOf parses args as sweep's flags and builds the configuration, with getenv as the
// environment.
func sweepConfigOf(t *testing.T, getenv func(string) string, args ...string) (config.Config, string) {
	t.Helper()
	e, _, errb := testEnv()
	if getenv != nil {
		e.getenv = getenv
	}
	fl, err := parseSweepFlags(e, args)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	cfg, err := sweepConfig(e, fl)
	if err != nil {
		t.Fatalf("%q: %v\n%s", args, err, errb)
	}
	return cfg, errb.String()
}

// --slo replaces the configuration's SLOs with those given; --slo-ttft-p95 overrides its one.
func TestSweepSLOFlags(t *testing.T) {
	cfg, _ := sweepConfigOf(t, nil, "--slo", "ttft:p99:3s", "--slo", "itl:p50:20ms")
	if want := (analysis.SLO{TTFTP99: 3 * time.Second, ITLP50: 20 * time.Millisecond}); cfg.SLO != want {
		t.Errorf("--slo: slo %+v, want %+v", cfg.SLO, want)
	}
	cfg, _ = sweepConfigOf(t, nil, "--slo-ttft-p95", "1s")
	if want := (analysis.SLO{TTFTP95: time.Second, TPOTP95: config.Demo().SLO.TPOTP95}); cfg.SLO != want {
		t.Errorf("--slo-ttft-p95: slo %+v, want %+v", cfg.SLO, want)
	}
}
