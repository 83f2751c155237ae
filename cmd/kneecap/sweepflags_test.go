package main

// The sweep's flags as they reach its configuration (sweepConfig), without sweeping.

import (
	"strings"
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

// OPENAI_BASE_URL exported in the shell does not turn a flagless sweep (or one with a file
// naming no target) away from the simulator: only --url env reads it.
func TestSweepIgnoresEnvBaseURL(t *testing.T) {
	env := func(k string) string { return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}[k] }
	cfg, _ := sweepConfigOf(t, env)
	if cfg.Target.URL != "" || cfg.Name != config.Demo().Name {
		t.Errorf("flagless: target.url %q name %q, want the demo's simulator", cfg.Target.URL, cfg.Name)
	}
	cfg, _ = sweepConfigOf(t, env, "--url", "env", "--model", "m")
	if cfg.Target.URL != "http://127.0.0.1:1/v1" {
		t.Errorf("--url env: target.url %q", cfg.Target.URL)
	}
	e, _, errb := testEnv()
	fl, err := parseSweepFlags(e, []string{"--url", "env", "--model", "m"})
	if err == nil {
		_, err = sweepConfig(e, fl)
	}
	if code := exitCode(err); code != exitUsage || !strings.Contains(errb.String(), "--url env: OPENAI_BASE_URL is not set") {
		t.Errorf("--url env without the variable: exit %d, stderr %q", code, errb)
	}
}

// --resume DIR --url env reads OPENAI_BASE_URL as a fresh sweep does: the resumed run's target
// is the variable's URL, not the literal "env"; the variable unset is a usage error.
func TestResumeURLFromEnv(t *testing.T) {
	e, _, _ := testEnv()
	e.getenv = func(k string) string { return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}[k] }
	fl, err := parseSweepFlags(e, []string{"--resume", t.TempDir(), "--url", "env"})
	if err == nil {
		err = checkResumeFlags(e, fl)
	}
	if err != nil {
		t.Fatal(err)
	}
	var cfg config.Config
	fl.resumeOverrides(&cfg)
	if cfg.Target.URL != "http://127.0.0.1:1/v1" {
		t.Errorf("resumed target.url %q, want OPENAI_BASE_URL's", cfg.Target.URL)
	}
	e, _, _ = testEnv()
	fl, err = parseSweepFlags(e, []string{"--resume", t.TempDir(), "--url", "env"})
	if err == nil {
		err = checkResumeFlags(e, fl)
	}
	if code := exitCode(err); code != exitUsage || !strings.Contains(errString(err), "OPENAI_BASE_URL is not set") {
		t.Errorf("--resume --url env without the variable: exit %d, %v", code, err)
	}
}

// --api-key-env, --server-metrics-url and --dataset set their keys.
func TestSweepTargetFlags(t *testing.T) {
	cfg, _ := sweepConfigOf(t, nil, "--url", "http://127.0.0.1:1/v1", "--model", "m", "--api-key-env", "MY_KEY",
		"--server-metrics-url", "off", "--dataset", "prompts.jsonl")
	if cfg.Target.APIKeyEnv != "MY_KEY" || cfg.ServerMetrics.URL != "off" || cfg.Workload.Dataset != "prompts.jsonl" {
		t.Errorf("api_key_env %q server_metrics.url %q dataset %q", cfg.Target.APIKeyEnv, cfg.ServerMetrics.URL, cfg.Workload.Dataset)
	}
}

// --gpu-metrics-url is repeatable and sets gpu_metrics.urls; --gpu-metrics sets its source; the
// two together with nvidia-smi, or a source not known, are configuration problems naming the key.
func TestSweepGPUFlags(t *testing.T) {
	cfg, _ := sweepConfigOf(t, nil, "--url", "http://127.0.0.1:1/v1", "--model", "m",
		"--gpu-metrics-url", "http://node-7:9400/metrics", "--gpu-metrics-url", "http://node-8:9400/metrics")
	if got := strings.Join(cfg.GPUMetrics.URLs, " "); got != "http://node-7:9400/metrics http://node-8:9400/metrics" {
		t.Errorf("gpu_metrics.urls %q", got)
	}
	cfg, _ = sweepConfigOf(t, nil, "--url", "http://127.0.0.1:1/v1", "--model", "m", "--gpu-metrics", "off")
	if !cfg.GPUMetrics.Off() {
		t.Errorf("--gpu-metrics off: gpu_metrics %+v", cfg.GPUMetrics)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu-metrics", "nvidia-smi", "--gpu-metrics-url", "http://node-7:9400/metrics"}, "gpu_metrics.urls: nvidia-smi"},
		{[]string{"--gpu-metrics", "rocm-smi"}, "gpu_metrics.source: \"rocm-smi\""},
		{[]string{"--gpu-metrics-url", "node-7:9400"}, "gpu_metrics.urls"},
	} {
		e, _, errb := testEnv()
		fl, err := parseSweepFlags(e, append([]string{"--url", "http://127.0.0.1:1/v1", "--model", "m"}, tc.args...))
		if err == nil {
			var cfg config.Config
			if cfg, err = sweepConfig(e, fl); err == nil {
				err = cfg.Validate() // launch.New's check
			}
		}
		if err == nil || !strings.Contains(errb.String()+err.Error(), tc.want) {
			t.Errorf("%q: %v\n%s\nwant a problem naming %q", tc.args, err, errb, tc.want)
		}
	}
}
