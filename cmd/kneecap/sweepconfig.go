package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// configDefault is the usage text's note on a flag whose default the configuration supplies:
// " (`name`; default D, or the config file's; the demo's D')", name being the value's name
// that flag.PrintDefaults shows.
func configDefault(name, def, demo string) string {
	return fmt.Sprintf(" (`%s`; default %s, or the config file's; the demo's %s)", name, def, demo)
}

// sweepConfig builds the configuration from -c FILE (or the demo/default config) and the
// flags. The target is --url, else target.url, else the built-in simulator: OPENAI_BASE_URL
// is read only for --url env, so that a shell that exports it for other tools still runs the
// demo against the simulator.
func sweepConfig(e *env, fl *sweepFlags) (config.Config, error) {
	cfg, readErr, err := readSweepConfig(e, fl)
	if err != nil {
		return cfg, err
	}
	flagErr := applyTargetFlags(e, &cfg, fl)
	flagErr = errors.Join(flagErr, applyRunFlags(&cfg, fl))
	flagErr = errors.Join(flagErr, applyTraceFlags(&cfg, &fl.trace, fl.set))
	flagErr = errors.Join(flagErr, applyRateFlags(&cfg, &fl.rate, fl.set))
	if readErr != nil || flagErr != nil {
		// Every problem in one round: the keys that did not decode kept their defaults.
		return cfg, configProblems(e, "sweep", config.JoinProblems(readErr, flagErr, cfg.Validate()))
	}
	return cfg, nil
}

// readSweepConfig reads -c FILE, or returns the demo configuration (no --url) or the
// defaults. readErr holds the problems of single keys, reported with the flags' and
// Validate's; err ends the command.
func readSweepConfig(e *env, fl *sweepFlags) (cfg config.Config, readErr, err error) {
	switch {
	case fl.config != "":
		c, err := config.Read(fl.config)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return c, nil, usageError("sweep: %w", err)
			}
			if !config.KeyProblems(err) {
				return c, nil, configProblems(e, "sweep", err)
			}
			readErr = err
		}
		return c, readErr, nil
	case fl.url == "":
		return config.Demo(), nil, nil
	default:
		return config.Default(), nil, nil
	}
}

// flagSetter copies the flags the command line set into cfg, recording each override.
type flagSetter struct {
	cfg *config.Config
	fl  *sweepFlags
}

func (f flagSetter) str(flagName, key string, dst *string, v string) {
	if f.fl.set[flagName] {
		*dst = v
		f.cfg.Override(key, "--"+flagName)
	}
}

func (f flagSetter) dur(flagName, key string, dst *time.Duration, v time.Duration) {
	if f.fl.set[flagName] {
		*dst = v
		f.cfg.Override(key, "--"+flagName)
	}
}

// applyTargetFlags applies the target's flags (--url, --model, --api, keys and headers, the
// metrics URL) and --dataset and --name.
func applyTargetFlags(e *env, cfg *config.Config, fl *sweepFlags) error {
	flagErr := fl.resolveURL(e)
	set := flagSetter{cfg, fl}
	fl.applyURL(cfg)
	set.str("model", "target.model", &cfg.Target.Model, fl.model)
	set.str("api-key-env", "target.api_key_env", &cfg.Target.APIKeyEnv, fl.apiKeyEnv)
	fl.headers.apply(cfg)
	set.str("server-metrics-url", "server_metrics.url", &cfg.ServerMetrics.URL, fl.metricsURL)
	set.str("gpu-metrics", "gpu_metrics.source", &cfg.GPUMetrics.Source, fl.gpuSource)
	if fl.set["gpu-metrics-url"] {
		cfg.GPUMetrics.URLs = []string(fl.gpuURLs)
		cfg.Override("gpu_metrics.urls", "--gpu-metrics-url")
	}
	set.str("dataset", "workload.dataset", &cfg.Workload.Dataset, fl.dataset)
	set.str("name", "name", &cfg.Name, fl.name)
	if fl.set["api"] {
		cfg.Target.API = record.API(fl.api)
		cfg.Override("target.api", "--api")
	}
	cfg.DefaultKeyEnv()
	return flagErr
}

// applyRunFlags applies the levels, protocol, workload-length, SLO, plan, output and shard
// flags.
func applyRunFlags(cfg *config.Config, fl *sweepFlags) error {
	var flagErr error
	set := flagSetter{cfg, fl}
	if fl.set["levels"] {
		if list, err := parseLevels(fl.levels); err != nil {
			flagErr = errors.Join(flagErr, fmt.Errorf("--levels: %w", err))
		} else {
			cfg.Sweep.Levels = sweep.LevelsSpec{List: list}
			cfg.Override("sweep.levels", "--levels")
		}
	}
	set.dur("warmup", "sweep.warmup", &cfg.Sweep.Warmup, fl.warmup)
	set.dur("duration", "sweep.duration", &cfg.Sweep.Duration, fl.duration)
	set.dur("max-duration", "sweep.max_duration", &cfg.Sweep.MaxDuration, fl.maxDuration)
	if fl.set["duration"] && !fl.set["max-duration"] && cfg.Sweep.MaxDuration < fl.duration {
		cfg.Sweep.MaxDuration = 2 * fl.duration // keep max_duration ≥ duration unless told
	}
	if fl.set["warmup"] && cfg.Sweep.WarmupMax < fl.warmup {
		cfg.Sweep.WarmupMax = 4 * fl.warmup
	}
	if fl.set["min-requests"] {
		cfg.Sweep.MinRequests = fl.minRequests
		cfg.Override("sweep.min_requests", "--min-requests")
	}
	if fl.set["refine"] {
		cfg.Sweep.Refine = fl.refine
		cfg.Override("sweep.refine", "--refine")
	}
	if fl.set["retry-excluded"] {
		cfg.Sweep.RetryExcluded = fl.retryExcluded
		cfg.Override("sweep.retry_excluded", "--retry-excluded")
	}
	if fl.set["input-tokens"] {
		cfg.Workload.InputTokens = workload.Dist{Dist: "fixed", Mean: float64(fl.inputTokens)}
		cfg.Override("workload.input_tokens", "--input-tokens")
	}
	if fl.set["output-tokens"] {
		cfg.Workload.OutputTokens = workload.Dist{Dist: "fixed", Mean: float64(fl.outputTokens)}
		cfg.Workload.FixedOutput = true
		cfg.Override("workload.output_tokens", "--output-tokens")
	}
	if fl.slo.given(fl.set) {
		cfg.SLO = fl.slo.apply(cfg.SLO, fl.set)
		cfg.Override("slo", "--slo")
	}
	fl.plan.applyConfig(cfg, fl.set)
	if fl.set["o"] {
		cfg.Output.Dir = fl.out
		cfg.Override("output.dir", "-o")
	}
	if fl.set["shard"] {
		if i, n, err := parseShard(fl.shard); err != nil {
			flagErr = errors.Join(flagErr, fmt.Errorf("--shard: %w", err))
		} else {
			cfg.Shard.Index, cfg.Shard.Count = i, n
			cfg.Override("shard.index", "--shard")
			cfg.Override("shard.count", "--shard")
		}
	}
	set.str("start-at", "shard.start_at", &cfg.Shard.StartAt, fl.startAt)
	set.str("serve-clock", "shard.serve_clock", &cfg.Shard.ServeClock, fl.serveClock)
	set.str("clock-server", "shard.clock_server", &cfg.Shard.ClockServer, fl.clockServer)
	return flagErr
}

// urlFromEnv is the --url value that reads the URL from OPENAI_BASE_URL.
const urlFromEnv = "env"

// applyURL sets target.url from --url when it gives one, naming where the URL came from.
func (fl *sweepFlags) applyURL(cfg *config.Config) {
	if !fl.set["url"] || fl.url == "" {
		return
	}
	origin := "--url"
	if fl.urlFromEnv {
		origin = "OPENAI_BASE_URL (--url env)"
	}
	cfg.Target.URL = fl.url
	cfg.Override("target.url", origin)
}

// resolveURL replaces --url env by OPENAI_BASE_URL's value (fl.urlFromEnv set); the
// variable unset is an error.
func (fl *sweepFlags) resolveURL(e *env) error {
	if fl.url != urlFromEnv {
		return nil
	}
	fl.url, fl.urlFromEnv = e.getenv("OPENAI_BASE_URL"), true
	if fl.url == "" {
		return errors.New("--url env: OPENAI_BASE_URL is not set")
	}
	return nil
}

// configProblems prints every configuration problem on its own line, prefixed with the
// command, and returns exit 2 (launch.ConfigProblems).
func configProblems(e *env, cmd string, err error) error {
	return launch.ConfigProblems(e.stderr, cmd, err)
}

// parseLevels parses "1,2,4,8".
func parseLevels(s string) ([]int, error) {
	return config.ParseList(s, "1,2,4,8", func(f string) (int, error) {
		v, err := strconv.Atoi(f)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", f)
		}
		return v, nil
	})
}

// parseShard parses "I/N" with 0 ≤ I < N.
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			n, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("%q: want I/N, such as 0/4", s)
	}
	if n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("%q: want 0 ≤ I < N", s)
	}
	return i, n, nil
}
