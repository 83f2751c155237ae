package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/grid"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/internal/live"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/summary"
	"github.com/kneecap/kneecap/sweep"
)

const sweepUsage = `[-c FILE] [-o DIR] [--url URL|env] [--model M] [--api chat|completions|responses|messages]
                     [--api-key-env NAME] [--header NAME:VALUE]... [--server-metrics-url URL|off]
                     [--gpu-metrics-url URL|off]... [--gpu-metrics dcgm|nvidia-smi|off]
                     [--dataset FILE] [--format text|json]
                     [--levels 1,2,4,...] [--warmup D] [--duration D] [--min-requests N]
                     [--max-duration D] [--input-tokens N] [--output-tokens N] [--name NAME]
                     [--refine N] [--resume DIR]
                     [--shard I/N --start-at TIME [--serve-clock ADDR] [--clock-server ADDR]]
                     [--mode rate|concurrency] [--rates 1,2,4,...|auto [--from DIR]]
                     [--arrival poisson|gamma|constant] [--burstiness B] [--max-concurrency N]
                     [--trace FILE [--time-scale 0.5,1,2,...] [--trace-window START-END]]
                     [--slo METRIC:PCT:D]... [--slo-ttft-p95 D] [--slo-tpot-p95 D] [--slo-e2e-p95 D]
                     [--plan-users N] [--plan-qps F] [--plan-output-tps F]
                     [--replica-cost-per-hour F] [--gpus-per-replica N] [--energy-cost-per-kwh F]

Steps concurrency upward against an OpenAI-compatible streaming endpoint and writes a results
directory (default runs/<UTC time>-<name>/). Without --url or target.url it sweeps the
built-in simulator, and with no file it runs the demo (about 90 s); OPENAI_BASE_URL is the
target only with --url env.
The API key is read from the variable named by target.api_key_env (OPENAI_API_KEY;
ANTHROPIC_API_KEY with --api messages, which sends it as x-api-key).

--rates makes the sweep open-loop: each level offers an arrival rate in requests/s (Poisson
arrivals by default) whatever the server does, and is measured from each request's scheduled
arrival; the answer is the largest rate the replica sustains, and the largest meeting the SLO.
--rates auto first runs a short closed-loop probe (or reads --from DIR) for the max QPS and
offers 0.1 … 1.3 × it.

--trace FILE replays a recorded trace open loop (Mooncake JSONL, BurstGPT or Azure CSV) with
its lengths and, at --time-scale S, its arrival times ÷ S; the answer is the largest scale the
replica carries within the SLO.

--refine N adds up to N levels after the planned ones, one at a time, each where the SLO
limit, the knee or the TTFT blow-up lies farthest from a measured level, so that the answers
a capacity review quotes are measured, not only interpolated between doublings. Before that,
a level excluded for steadiness or the client's lateness runs again with twice its window
(--retry-excluded N times, default 1; 0 never).

A file with scenarios: (a scenario grid) runs the sweep once per scenario, each with the
scenario's workload keys overlaid, into DIR/<name>/, and writes the grid's table of knees and
Pareto chart into DIR; --resume DIR skips the scenarios that finished.

Past one machine, N processes load one server together: each runs with --shard I/N (I = 0 …
N-1, such as a Kubernetes Indexed Job's $(JOB_COMPLETION_INDEX)) and the same --start-at, runs
its part of every level's workers on a fixed schedule, and writes its own directory; then
kneecap merge SHARD_DIR... -o DIR analyzes the whole sweep. One shard serves its clock
(--serve-clock ADDR) and every shard measures its own against it before each level
(--clock-server ADDR), so that the merge puts every shard's times on that one clock.`

// sweepFlags are the flags of `kneecap sweep`.
type sweepFlags struct {
	config, out, url, model, api, levels, resume, name string
	shard, startAt, serveClock, clockServer            string
	apiKeyEnv, metricsURL, dataset, format             string
	urlFromEnv                                         bool // --url env: url is OPENAI_BASE_URL
	headers                                            headerList
	gpuURLs                                            stringList
	gpuSource                                          string
	warmup, duration, maxDuration                      time.Duration
	minRequests, inputTokens, outputTokens, refine     int
	retryExcluded                                      int
	rate                                               rateFlags
	trace                                              traceFlags
	slo                                                sloFlags
	plan                                               planFlags
	set                                                map[string]bool
}

// parseSweepFlags parses the arguments of `kneecap sweep`.
func parseSweepFlags(e *env, args []string) (*sweepFlags, error) {
	fl := &sweepFlags{set: map[string]bool{}}
	fs := newFlagSet(e, "sweep", sweepUsage)
	fs.StringVar(&fl.config, "c", "", "configuration `FILE` (YAML; see examples/)")
	fs.StringVar(&fl.out, "o", "", "results `DIR` (default runs/<UTC time>-<name>/)")
	fs.StringVar(&fl.url, "url", "", "OpenAI base `URL` including /v1, or env for $OPENAI_BASE_URL (default: target.url, else the built-in simulator)")
	fs.StringVar(&fl.model, "model", "", "model `name` sent in every request")
	fs.StringVar(&fl.api, "api", "", "`API`: chat, completions, responses (OpenAI Responses), messages (Anthropic Messages) or embeddings")
	fs.StringVar(&fl.apiKeyEnv, "api-key-env", "", "environment variable `NAME` holding the API key (target.api_key_env; default OPENAI_API_KEY, ANTHROPIC_API_KEY for --api messages)")
	fs.Var(&fl.headers, "header", "HTTP header `NAME:VALUE` sent on every request to the target's origin, repeatable (adds to target.headers); "+
		"values of secret-looking names (Authorization, *-Key, *Token*, Cookie, …) are redacted everywhere")
	fs.StringVar(&fl.metricsURL, "server-metrics-url", "", "the server's Prometheus `URL` (server_metrics.url; default: /metrics at the target's host when it answers; off to disable)")
	fs.Var(&fl.gpuURLs, "gpu-metrics-url", "a DCGM exporter's Prometheus `URL`, repeatable (gpu_metrics.urls; default: DCGM families in the server's metrics, else :9400/metrics at the target's host when it answers; off to disable)")
	fs.StringVar(&fl.gpuSource, "gpu-metrics", "", "GPU telemetry `source`: dcgm, nvidia-smi (run on this machine, the GPU host) or off (gpu_metrics.source)")
	fs.StringVar(&fl.dataset, "dataset", "", "replay prompts from `FILE`: ShareGPT JSON/JSONL or JSONL of {prompt, max_tokens} (workload.dataset)")
	fs.StringVar(&fl.levels, "levels", "", "concurrency levels, a `list` such as 1,2,4,8")
	// These flags default to 0 and override the configuration only when given, so the usage
	// states the defaults the configuration supplies (DESIGN §9; the demo's are shorter).
	def, demo := config.Default().Sweep, config.Demo().Sweep
	durationVar(fs, &fl.warmup, "warmup", 0, "minimum warmup per level"+
		configDefault("duration", config.ShortDuration(def.Warmup), config.ShortDuration(demo.Warmup)))
	durationVar(fs, &fl.duration, "duration", 0, "minimum measurement window per level"+
		configDefault("duration", config.ShortDuration(def.Duration), config.ShortDuration(demo.Duration)))
	durationVar(fs, &fl.maxDuration, "max-duration", 0, "longest measurement window when the level is not steady"+
		configDefault("duration", config.ShortDuration(def.MaxDuration), config.ShortDuration(demo.MaxDuration)))
	fs.IntVar(&fl.minRequests, "min-requests", 0, "minimum completions in a level's window"+
		configDefault("N", strconv.Itoa(def.MinRequests), strconv.Itoa(demo.MinRequests)))
	fs.IntVar(&fl.inputTokens, "input-tokens", 0, "prompt length in tokens (`N`, fixed)")
	fs.IntVar(&fl.outputTokens, "output-tokens", 0, "output length in tokens (`N`, fixed, with ignore_eos)")
	fs.StringVar(&fl.name, "name", "", "run `name` (results directory suffix, chart titles)")
	fs.IntVar(&fl.refine, "refine", 0, "add up to N levels after the planned ones where an answer lies between levels run (sweep.refine)"+
		configDefault("N", strconv.Itoa(def.Refine), strconv.Itoa(demo.Refine)))
	fs.IntVar(&fl.retryExcluded, "retry-excluded", 0, "run a level excluded for steadiness or the client's lateness again, up to N times, each with twice the window (sweep.retry_excluded)"+
		configDefault("N", strconv.Itoa(def.RetryExcluded), strconv.Itoa(demo.RetryExcluded)))
	fs.StringVar(&fl.resume, "resume", "", "continue the interrupted run in `DIR` after its last finished level")
	fs.StringVar(&fl.shard, "shard", "", "run shard `I/N` of a sweep that N processes run together (shard.index, shard.count)")
	fs.StringVar(&fl.startAt, "start-at", "", "agreed RFC 3339 `TIME` at which every shard starts level 1 (shard.start_at)")
	fs.StringVar(&fl.serveClock, "serve-clock", "", "serve this process's clock to the other shards on `ADDR` (host:port; shard.serve_clock)")
	fs.StringVar(&fl.clockServer, "clock-server", "", "measure this shard's clock before every level against the one served at `ADDR` (host:port; shard.clock_server)")
	fl.slo.register(fs, "the config file's slo:")
	fl.plan.register(fs)
	fs.StringVar(&fl.format, "format", "text", "stdout `format`: text (the console summary) or json (analysis.json once analyzed; everything else on stderr)")
	fl.rate.define(fs)
	fl.trace.define(fs)
	wideFlag(fs, e)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, cmdUsageError("sweep", "sweep: unexpected argument %q (sweep takes flags only)", pos[0])
	}
	fs.Visit(func(f *flag.Flag) { fl.set[f.Name] = true })
	if err := checkFormat("sweep", fl.format); err != nil {
		return nil, err
	}
	return fl, nil
}

// cmdSweep runs `kneecap sweep`: it prepares the sweep (configuration, resume, results
// directory, workload: launch), starts the target (an endpoint, or the simulator in-process),
// checks it, sizes the prompts in its tokens, records what it is, runs the levels, and
// analyzes and reports what was measured — also after an interrupt (exit 130). Nothing it
// prints, writes or returns holds the API key or another secret of the configuration
// (redact.Secrets).
func cmdSweep(ctx context.Context, e *env, args []string) error {
	fl, err := parseSweepFlags(e, args)
	if err != nil {
		return err
	}
	if fl.resume != "" && grid.IsDir(fl.resume) {
		return resumeGrid(ctx, e, fl)
	}
	s, err := prepareSweep(e, fl)
	if err != nil {
		return err
	}
	if s.Cfg.Grid() {
		return runGrid(ctx, e, fl, s.Cfg)
	}
	return runSweep(ctx, e, fl, s)
}

// prepareSweep turns the flags into a sweep ready to run: launch.New of their configuration,
// or launch.Reopen of --resume DIR.
func prepareSweep(e *env, fl *sweepFlags) (*launch.Sweep, error) {
	if fl.resume != "" {
		if err := checkResumeFlags(e, fl); err != nil {
			return nil, err
		}
		return launch.Reopen(e.launch(), fl.resume, fl.resumeOverrides)
	}
	cfg, err := sweepConfig(e, fl)
	if err != nil {
		return nil, err
	}
	return launch.New(e.launch(), cfg, fl.rate.from)
}

// runSweep runs the prepared sweep s (one sweep, or one scenario of a grid) and analyzes and
// reports what was measured; fl.format chooses what stdout gets.
func runSweep(ctx context.Context, e *env, fl *sweepFlags, s *launch.Sweep) (err error) {
	defer s.Release()
	// From here on, every line printed and the error returned lose the run's secrets, in
	// every form (DESIGN §7); the results directory does the same for its files.
	e = e.redacting(s.Secrets)
	defer func() { err = s.Secrets.Error(err) }()
	stdout := e
	e = forFormat(e, fl.format)
	s.Env = e.launch()
	bi, ok := debug.ReadBuildInfo()
	var probe *live.Display
	t, err := s.Start(ctx, version(bi, ok), func(levels []int, proto sweep.Protocol) launch.Progress {
		probe = live.Probe(e.terminal(), s, levels, proto)
		return probe
	})
	if stop := (*launch.ProbeStoppedError)(nil); errors.As(err, &stop) {
		// The --rates auto probe stopped, or the preflight hung: the directory is reported as
		// any failed sweep's.
		if aerr := afterSweep(ctx, e, "sweep", s.Dir.Path()); aerr != nil {
			return aerr
		}
		if perr := printAnalysis(stdout, fl.format, s.Dir.Path()); perr != nil {
			return perr
		}
		return fmt.Errorf("%w (results so far in %s)", err, s.Dir.Path())
	}
	if err != nil {
		return err
	}
	defer t.Close()
	prog := live.Sweep(e.terminal(), s, probe)
	plan := s.Plan(prog)
	stopTelemetry, err := s.StartTelemetry(ctx, t, &plan)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "kneecap: sweeping %s (model %s), %s, results in %s\n",
		redact.URL(t.Endpoint), s.Cfg.Target.Model, s.What(plan), s.Dir.Path())
	restoreGC := selfcheck.SetLoadGC()
	out, runErr := sweep.Run(ctx, e.interrupt, plan, t.Client(), s.Dir)
	restoreGC()
	prog.Close()
	if err := stopTelemetry(); err != nil {
		fmt.Fprintf(e.stderr, "kneecap: %s\n", strings.ReplaceAll(err.Error(), "\n", "\nkneecap: "))
	}
	if err := s.Dir.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return fmt.Errorf("%w (results so far in %s)", prefixed("sweep", runErr), s.Dir.Path())
	}
	prog.Stopped(out)
	if s.Cfg.Shard.Sharded() {
		return shardDone(e, s.Cfg.Shard, out, s.Dir.Path())
	}
	// Also after an interrupt: what was measured is analyzed and written, until the next signal
	// (ctx: the second) stops the analysis; after a hard stop (ctx already done) it runs on,
	// and a third signal ends the process (main).
	actx := ctx
	if ctx.Err() != nil {
		actx = context.WithoutCancel(ctx)
	}
	if err := afterSweep(actx, e, "sweep", s.Dir.Path()); err != nil {
		return err
	}
	if err := printAnalysis(stdout, fl.format, s.Dir.Path()); err != nil {
		return err
	}
	if out.Interrupted {
		return withCode(exitInterrupted, fmt.Errorf("sweep interrupted: results written to %s (continue with --resume %s)", s.Dir.Path(), s.Dir.Path()))
	}
	return launch.ServerDown(out, s.Dir.Path())
}

// shardDone ends a shard's sweep: its levels hold a part of the load each, so only the merge of
// every shard is analyzed.
func shardDone(e *env, shard config.ShardConfig, out sweep.Outcome, dir string) error {
	fmt.Fprintf(e.stdout, "kneecap sweep: shard %s: %d levels, stopped: %s\nresults: %s\nwhen every shard has finished: kneecap merge SHARD_DIR... -o DIR\n",
		shard, len(out.Levels), out.StopReason, dir)
	if out.Interrupted {
		return withCode(exitInterrupted, fmt.Errorf("sweep interrupted: shard %s results written to %s", shard, dir))
	}
	if strings.HasPrefix(out.StopReason, sweep.StopScheduleMissed) {
		return fmt.Errorf("sweep: shard %s: %s (results so far in %s)", shard, out.StopReason, dir)
	}
	return launch.ServerDown(out, dir)
}

// afterSweep runs once command cmd (sweep, merge) has written its records into dirPath (also
// after an interrupt): it reads the results directory back, analyzes it exactly as `kneecap
// analyze DIR` would, and writes analysis.json, summary.csv, the charts and the reports into
// it, then prints the answer. An interrupt (ctx done) stops it before it writes any of them,
// with exit 130 and a message that says the records are written and how to write the rest.
func afterSweep(ctx context.Context, e *env, cmd, dirPath string) error {
	left := fmt.Sprintf("the records are written to %s; its analysis and reports are not (kneecap analyze %s writes them)", dirPath, dirPath)
	res, err := rundir.ReadContext(ctx, dirPath)
	if err := interruptError(ctx, cmd, left); err != nil {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	fmt.Fprintf(e.stdout, "%s: model %s at %s, %d levels, stopped: %s\n\n",
		strings.TrimSpace("kneecap sweep "+res.Config.Name), res.Config.Target.Model, res.Endpoint, len(res.Levels), res.StopReason)
	opts := res.Config.AnalysisOptions()
	opts.Stop = ctx.Done()
	result := summary.FromResults(res).Analyze(opts)
	if err := writeResults(ctx, e, dirPath, result, cmd, left); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "results: %s\n", dirPath)
	return nil
}
