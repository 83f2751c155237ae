package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/summary"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
)

const sweepUsage = `[-c FILE] [-o DIR] [--url URL] [--model M] [--api chat|completions]
                     [--levels 1,2,4,...] [--warmup D] [--duration D] [--min-requests N]
                     [--max-duration D] [--input-tokens N] [--output-tokens N] [--name NAME]
                     [--refine N] [--resume DIR] [--shard I/N --start-at TIME]

Steps concurrency upward against an OpenAI-compatible streaming endpoint and writes a results
directory (default runs/<UTC time>-<name>/). Without --url, target.url or OPENAI_BASE_URL it
sweeps the built-in simulator; with no flags and no file it runs the demo (about 90 s).
The API key is read from the variable named by target.api_key_env (OPENAI_API_KEY).

--refine N adds up to N levels after the planned ones, one at a time, each where the SLO
limit, the knee or the TTFT blow-up lies farthest from a measured level, so that the answers
a capacity review quotes are measured, not only interpolated between doublings.

Past one machine, N processes load one server together: each runs with --shard I/N (I = 0 …
N-1, such as a Kubernetes Indexed Job's $(JOB_COMPLETION_INDEX)) and the same --start-at, runs
its part of every level's workers on a fixed schedule, and writes its own directory; then
kneecap merge SHARD_DIR... -o DIR analyzes the whole sweep.`

// preflightTimeout bounds the preflight (GET /v1/models and one probe request).
const preflightTimeout = 10 * time.Second

// sweepFlags are the flags of `kneecap sweep`.
type sweepFlags struct {
	config, out, url, model, api, levels, resume, name string
	shard, startAt                                     string
	warmup, duration, maxDuration                      time.Duration
	minRequests, inputTokens, outputTokens, refine     int
	set                                                map[string]bool
}

// demoConfig is the configuration of a bare `kneecap sweep`: the demo simulator (32 slots,
// step 4 ms + 250 µs per sequence, so t(32) = 12 ms and throughput plateaus at ≈ 2,667
// tokens/s from concurrency 32), levels 1 … 128 doubling, short windows and 64-token answers
// so the planned sweep takes about a minute on two cores with the knee in the middle; then two
// levels are added where answers lie between doublings.
func demoConfig() sweep.Config {
	c := sweep.DefaultConfig()
	c.Name = "demo"
	c.Simulator = sim.Config{Profile: sim.ProfileDemo}
	c.Workload.InputTokens = sweep.Dist{Dist: "fixed", Mean: 128}
	c.Workload.OutputTokens = sweep.Dist{Dist: "fixed", Mean: 64}
	c.Sweep.Levels = sweep.LevelsSpec{Start: 1, Max: 128, Factor: 2}
	c.Sweep.Warmup = 1500 * time.Millisecond
	c.Sweep.WarmupMax = 20 * time.Second
	c.Sweep.Duration = 4 * time.Second
	c.Sweep.MinRequests = 20
	c.Sweep.MaxDuration = 8 * time.Second
	c.Sweep.DrainTimeout = 20 * time.Second
	c.Sweep.Refine = 2 // measure near the knee and the SLO limit, not only at doublings
	return c
}

// cmdSweep runs `kneecap sweep`.
func cmdSweep(ctx context.Context, e *env, args []string) error {
	fl := sweepFlags{set: map[string]bool{}}
	fs := newFlagSet(e, "sweep", sweepUsage)
	fs.StringVar(&fl.config, "c", "", "configuration `FILE` (YAML; see examples/)")
	fs.StringVar(&fl.out, "o", "", "results `DIR` (default runs/<UTC time>-<name>/)")
	fs.StringVar(&fl.url, "url", "", "OpenAI base `URL` including /v1 (default: OPENAI_BASE_URL, else the built-in simulator)")
	fs.StringVar(&fl.model, "model", "", "model `name` sent in every request")
	fs.StringVar(&fl.api, "api", "", "`API`: chat or completions")
	fs.StringVar(&fl.levels, "levels", "", "concurrency levels, a `list` such as 1,2,4,8")
	// These flags default to 0 and override the configuration only when given, so the usage
	// states the defaults the configuration supplies (DESIGN §9; the demo's are shorter).
	def, demo := sweep.DefaultConfig().Sweep, demoConfig().Sweep
	fs.DurationVar(&fl.warmup, "warmup", 0, "minimum warmup per level"+
		configDefault("duration", shortDuration(def.Warmup), shortDuration(demo.Warmup)))
	fs.DurationVar(&fl.duration, "duration", 0, "minimum measurement window per level"+
		configDefault("duration", shortDuration(def.Duration), shortDuration(demo.Duration)))
	fs.DurationVar(&fl.maxDuration, "max-duration", 0, "longest measurement window when the level is not steady"+
		configDefault("duration", shortDuration(def.MaxDuration), shortDuration(demo.MaxDuration)))
	fs.IntVar(&fl.minRequests, "min-requests", 0, "minimum completions in a level's window"+
		configDefault("N", strconv.Itoa(def.MinRequests), strconv.Itoa(demo.MinRequests)))
	fs.IntVar(&fl.inputTokens, "input-tokens", 0, "prompt length in tokens (`N`, fixed)")
	fs.IntVar(&fl.outputTokens, "output-tokens", 0, "output length in tokens (`N`, fixed, with ignore_eos)")
	fs.StringVar(&fl.name, "name", "", "run `name` (results directory suffix, chart titles)")
	fs.IntVar(&fl.refine, "refine", 0, "add up to N levels after the planned ones where an answer lies between levels run (sweep.refine)"+
		configDefault("N", strconv.Itoa(def.Refine), strconv.Itoa(demo.Refine)))
	fs.StringVar(&fl.resume, "resume", "", "continue the interrupted run in `DIR` after its last finished level")
	fs.StringVar(&fl.shard, "shard", "", "run shard `I/N` of a sweep that N processes run together (shard.index, shard.count)")
	fs.StringVar(&fl.startAt, "start-at", "", "agreed RFC 3339 `TIME` at which every shard starts level 1 (shard.start_at)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("sweep: unexpected argument %q (flags only; see kneecap sweep -h)", pos[0])
	}
	fs.Visit(func(f *flag.Flag) { fl.set[f.Name] = true })

	var (
		cfg  sweep.Config
		done *sweep.Results
		dir  *sweep.Dir
	)
	if fl.resume != "" {
		for _, name := range []string{"c", "o", "model", "api", "levels", "warmup", "duration", "max-duration",
			"min-requests", "input-tokens", "output-tokens", "name", "shard", "start-at", "refine"} {
			if fl.set[name] {
				return usageError("sweep: --resume takes the configuration from %s; -%s cannot change it", fl.resume, name)
			}
		}
		// ResumeDir refuses a finished run (sweep.ErrFinished) before it rewrites anything.
		if head, err := sweep.ReadResultsMeta(fl.resume); err == nil && head.Config.Shard.Sharded() {
			return usageError("sweep: --resume %s: shard %s ran on a schedule shared with the other shards, which has passed: run every shard again with a new --start-at",
				fl.resume, head.Config.Shard)
		} else if err == nil && head.Shards > 0 {
			return usageError("sweep: --resume %s: it merges %d shards; one process cannot continue their sweep: run every shard again with a new --start-at",
				fl.resume, head.Shards)
		}
		dir, done, err = sweep.ResumeDir(fl.resume)
		if err != nil {
			return usageError("sweep: %w", err)
		}
		defer dir.Close()
		cfg = done.Config
		if fl.set["url"] {
			cfg.Target.URL = fl.url
			cfg.Override("target.url", "--url")
		}
	} else {
		cfg, err = sweepConfig(e, &fl)
		if err != nil {
			return err
		}
	}
	if err := cfg.Validate(); err != nil {
		return configProblems(e, "sweep", err)
	}
	levels, err := cfg.Sweep.Levels.Expand()
	if err != nil { // Validate has checked it
		return usageError("sweep: levels: %w", err)
	}
	planned, added := 0, 0 // done levels of the plan, and added ones (sweep.refine)
	if done != nil {
		for _, l := range done.Levels {
			if l.Refine != "" {
				added++
			} else {
				planned++
			}
		}
		if added >= cfg.Sweep.Refine && (added > 0 || planned >= len(levels)) {
			return usageError("sweep: resume %s: all %d levels are done (%d planned, %d added): nothing to resume",
				fl.resume, len(done.Levels), planned, added)
		}
	}
	shard := cfg.Shard
	var schedule *sweep.Schedule
	if shard.Sharded() {
		at, _ := shard.Start() // Validate has checked it
		if late := time.Since(at); late > 0 {
			return usageError("sweep: shard %s: start_at %s passed %s ago: every shard must be started before it; choose a later time",
				shard, shard.StartAt, late.Round(time.Second))
		}
		schedule = &sweep.Schedule{Start: at, Shard: shard.Index, Shards: shard.Count}
	}

	// The workload (a dataset is read here) before anything is created: a bad dataset is a
	// usage error that leaves nothing behind.
	wl, err := sweep.NewWorkload(cfg.Workload, cfg.Target.API)
	if err != nil {
		return usageError("%w", err)
	}

	// The results directory must be writable before anything runs.
	outDir := ""
	if dir == nil {
		outDir = resultsDirPath(cfg, time.Now())
		advice := fmt.Sprintf("continue it with --resume %s, or choose another -o", outDir)
		if shard.Sharded() {
			advice = "give each shard its own -o" // a shard cannot be resumed
		}
		created, err := checkWritable(outDir, advice)
		if err != nil {
			return usageError("sweep: results directory: %w", err)
		}
		defer func() {
			if dir == nil && created {
				os.Remove(outDir) // nothing was written: leave no empty directory behind
			}
		}()
	}

	// The target: an endpoint, or the simulator in-process.
	endpoint := cfg.Target.URL
	scrape := cfg.ServerMetrics
	if endpoint == "" {
		simCfg, err := sim.Resolve(cfg.Simulator)
		if err != nil {
			return usageError("sweep: simulator: %w", err)
		}
		running, err := sim.Start(simCfg, "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("sweep: start simulator: %w", err)
		}
		defer running.Close()
		cfg.Simulator = simCfg
		if cfg.Target.Model == "" {
			cfg.Target.Model = simCfg.Model
		}
		endpoint = running.URL
		if scrape.URL == "" {
			// Not written to config.yaml: the port is new on every run.
			scrape.URL = strings.TrimSuffix(running.URL, "/v1") + "/metrics"
		}
		fmt.Fprintf(e.stderr, "kneecap: simulator %s at %s\n", simCfg, endpoint)
	}
	apiKey := ""
	if cfg.Target.APIKeyEnv != "" && cfg.Target.URL != "" {
		apiKey = e.getenv(cfg.Target.APIKeyEnv)
	}
	client, err := openai.New(openai.Options{
		BaseURL:            endpoint,
		Model:              cfg.Target.Model,
		API:                cfg.Target.API,
		APIKey:             apiKey,
		ExtraBody:          cfg.Target.ExtraBody,
		RequestTimeout:     cfg.Target.RequestTimeout,
		MaxConns:           maxWorkers(levels, shard),
		CAFile:             cfg.Target.TLS.CAFile,
		InsecureSkipVerify: cfg.Target.TLS.InsecureSkipVerify,
		RecordChunks:       cfg.Sweep.RecordChunks == nil || *cfg.Sweep.RecordChunks,
	})
	if err != nil {
		return usageError("sweep: %w", err)
	}
	defer client.Close()
	if cfg.Target.TLS.InsecureSkipVerify {
		fmt.Fprintln(e.stderr, "kneecap: WARNING: TLS certificate verification is off (target.tls.insecure_skip_verify)")
	}

	if err := preflight(ctx, e, client, cfg, endpoint); err != nil {
		return err
	}

	if dir == nil {
		if dir, err = sweep.CreateDir(outDir, cfg, endpoint, time.Now()); err != nil {
			return usageError("sweep: %w", err)
		}
		defer dir.Close()
	} else {
		dir.SetEndpoint(endpoint)
	}
	if err := recordServer(ctx, e, client, cfg, dir, done); err != nil {
		return err
	}

	prog := newProgress(e.stderr, e.stderrTTY, levels, cfg.Sweep)
	prog.added, prog.refine = added, cfg.Sweep.Refine
	plan := sweep.Plan{
		Levels:    levels,
		Protocol:  cfg.Sweep,
		Workload:  wl,
		ThinkTime: cfg.Workload.ThinkTime,
		Judge:     sweepJudge(cfg),
		Observer:  prog,
		Schedule:  schedule,
	}
	if cfg.Sweep.Refine > 0 && schedule == nil {
		plan.Refiner, plan.Refine = sweepRefiner(cfg, prog), cfg.Sweep.Refine
	}
	if schedule != nil {
		plan.Judge = nil
		period := schedule.Period(cfg.Sweep)
		// The last level the budget admits (each starts only if its load ends within it).
		last := len(levels) - 1
		for b := cfg.Sweep.Stop.Budget; b > 0 && last > 0 && schedule.LevelEnd(cfg.Sweep, last).Add(-cfg.Sweep.DrainTimeout).Sub(schedule.Start) > b; {
			last--
		}
		fmt.Fprintf(e.stderr, "kneecap: shard %s: level 1 starts at %s, then one level every %s (warmup + max_duration + drain_timeout + cooldown + %s); level %d, the last to run, ends by %s. Stop rules other than stop.budget are not applied: the shards cannot agree on them.\n",
			shard, schedule.Start.UTC().Format(time.RFC3339Nano), period, sweep.ScheduleSlack,
			last+1, schedule.LevelEnd(cfg.Sweep, last).UTC().Format(time.RFC3339Nano))
	}
	if done != nil {
		plan.StartIndex = planned
		plan.Done = sweep.GroupRecords(done.Levels, done.Records)
		// With added levels to come, the stop rules may have ended the planned levels early:
		// Run asks the Judge again; so does this message.
		plannedOver := added > 0 || planned >= len(levels)
		stopped := ""
		if !plannedOver && plan.Refiner != nil {
			if stopped = plan.Judge.Decide(sweep.PlannedLevels(plan.Done)); stopped != "" {
				plannedOver = true
				stopped = " (stopped: " + stopped + ")"
			}
		}
		if plannedOver {
			fmt.Fprintf(e.stderr, "kneecap: resuming %s after its planned levels%s: %d of at most %d levels added so far\n",
				dir.Path(), stopped, added, cfg.Sweep.Refine)
			plan.StartIndex = len(levels)
		} else {
			fmt.Fprintf(e.stderr, "kneecap: resuming %s at level %d of %d (concurrency %d)\n",
				dir.Path(), plan.StartIndex+1, len(levels), levels[plan.StartIndex])
		}
	}

	// Server metrics: scraped in the background for the whole sweep.
	var stopScraper func() error
	if scrape.URL != "" {
		sc, stop, err := startScraper(ctx, scrape, dir)
		if err != nil {
			return err
		}
		plan.Scraper = sc
		stopScraper = stop
	}

	what := fmt.Sprintf("levels %v", levels[plan.StartIndex:])
	if plan.Refine > 0 {
		what += fmt.Sprintf(", then up to %d added", plan.Refine-added)
		if plan.StartIndex >= len(levels) {
			what = fmt.Sprintf("up to %d added levels", plan.Refine-added)
		}
	}
	fmt.Fprintf(e.stderr, "kneecap: sweeping %s (model %s), %s, results in %s\n",
		endpoint, cfg.Target.Model, what, dir.Path())
	restoreGC := sweep.SetLoadGC()
	out, runErr := sweep.Run(ctx, e.interrupt, plan, client, dir)
	restoreGC()
	prog.close()
	if stopScraper != nil {
		if err := stopScraper(); err != nil {
			fmt.Fprintf(e.stderr, "kneecap: server metrics: %v\n", err)
		}
	}
	if err := dir.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return fmt.Errorf("%w (results so far in %s)", prefixed("sweep", runErr), dir.Path())
	}
	addedNote := ""
	var addedCs []string
	for _, l := range out.Levels {
		if l.Refine != "" && !l.Interrupted { // an interrupted one is run again on --resume
			addedCs = append(addedCs, strconv.Itoa(l.Concurrency))
		}
	}
	if len(addedCs) > 0 {
		addedNote = "; then added " + strings.Join(addedCs, ", ")
	}
	fmt.Fprintf(e.stderr, "kneecap: stopped after %s: %s%s\n", out.Elapsed.Round(100*time.Millisecond), out.StopReason, addedNote)
	if shard.Sharded() {
		// A shard's levels hold a part of the load each: only the merge of every shard is
		// analyzed.
		fmt.Fprintf(e.stdout, "kneecap sweep: shard %s: %d levels, stopped: %s\nresults: %s\nwhen every shard has finished: kneecap merge SHARD_DIR... -o DIR\n",
			shard, len(out.Levels), out.StopReason, dir.Path())
		if out.Interrupted {
			return withCode(exitInterrupted, fmt.Errorf("sweep interrupted: shard %s results written to %s", shard, dir.Path()))
		}
		if strings.HasPrefix(out.StopReason, sweep.StopScheduleMissed) {
			return fmt.Errorf("sweep: shard %s: %s (results so far in %s)", shard, out.StopReason, dir.Path())
		}
		return nil
	}
	// Also after a hard stop (ctx cancelled): what was measured is analyzed and written.
	if err := afterSweep(e, dir.Path(), cfg); err != nil {
		return err
	}
	if out.Interrupted {
		return withCode(exitInterrupted, fmt.Errorf("sweep interrupted: results written to %s (continue with --resume %s)", dir.Path(), dir.Path()))
	}
	return nil
}

// recordServer asks the server what it is (sweep.ServerInfoPaths; not when
// target.server_info is false, and only on shard 0 of a sharded sweep, whose merge keeps
// shard 0's) and records the answer with kneecap's version in the results directory. A
// resumed run keeps what it recorded first (a run from before this record gets it now) and
// warns when the server or kneecap now differ.
func recordServer(ctx context.Context, e *env, client *openai.Client, cfg sweep.Config, dir *sweep.Dir, done *sweep.Results) error {
	bi, ok := debug.ReadBuildInfo()
	tool := version(bi, ok)
	var bodies map[string][]byte
	if (cfg.Target.ServerInfo == nil || *cfg.Target.ServerInfo) && cfg.Shard.Index == 0 {
		bodies = client.ServerInfo(ctx)
	}
	info := sweep.IdentifyServer(bodies)
	if done != nil && (done.Kneecap != "" || done.Server != nil) {
		if was, now := done.Server.String(), info.String(); was != now && len(bodies) > 0 {
			fmt.Fprintf(e.stderr, "kneecap: warning: the server now says %q; the levels so far measured %q (levels.json keeps the first)\n", now, was)
		}
		if done.Kneecap != tool {
			fmt.Fprintf(e.stderr, "kneecap: warning: this is kneecap %s; the levels so far were measured by %s (levels.json keeps the first)\n", tool, done.Kneecap)
		}
		return dir.SetProvenance(done.Kneecap, done.Server, nil)
	}
	var doc []byte
	if len(bodies) > 0 {
		var err error
		if doc, err = sweep.RedactServerInfo(bodies); err != nil {
			return err
		}
	}
	if info != nil {
		fmt.Fprintf(e.stderr, "kneecap: server: %s, from %s\n", info, info.From)
	}
	if err := dir.SetProvenance(tool, info, doc); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// configDefault is the usage text's note on a flag whose default the configuration supplies:
// " (`name`; default D, or the config file's; the demo's D')", name being the value's name
// that flag.PrintDefaults shows.
func configDefault(name, def, demo string) string {
	return fmt.Sprintf(" (`%s`; default %s, or the config file's; the demo's %s)", name, def, demo)
}

// shortDuration formats d as time.Duration.String does without its zero tails: 3m, not 3m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sweepConfig builds the configuration from -c FILE (or the demo/default config), the flags
// and the environment (OPENAI_BASE_URL).
func sweepConfig(e *env, fl *sweepFlags) (sweep.Config, error) {
	var (
		cfg     sweep.Config
		readErr error // problems of single keys of the file: reported with Validate's
		flagErr error // a flag that does not parse: likewise
	)
	switch {
	case fl.config != "":
		c, err := sweep.ReadConfig(fl.config)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return c, usageError("sweep: %w", err)
			}
			if !sweep.KeyProblems(err) {
				return c, configProblems(e, "sweep", err)
			}
			readErr = err
		}
		cfg = c
	case fl.url == "" && e.getenv("OPENAI_BASE_URL") == "":
		cfg = demoConfig()
	default:
		cfg = sweep.DefaultConfig()
	}
	str := func(flagName, key string, dst *string, v string) {
		if fl.set[flagName] {
			*dst = v
			cfg.Override(key, "--"+flagName)
		}
	}
	dur := func(flagName, key string, dst *time.Duration, v time.Duration) {
		if fl.set[flagName] {
			*dst = v
			cfg.Override(key, "--"+flagName)
		}
	}
	str("url", "target.url", &cfg.Target.URL, fl.url)
	str("model", "target.model", &cfg.Target.Model, fl.model)
	str("name", "name", &cfg.Name, fl.name)
	if fl.set["api"] {
		cfg.Target.API = sweep.API(fl.api)
		cfg.Override("target.api", "--api")
	}
	if fl.set["levels"] {
		if list, err := parseLevels(fl.levels); err != nil {
			flagErr = fmt.Errorf("--levels: %w", err)
		} else {
			cfg.Sweep.Levels = sweep.LevelsSpec{List: list}
			cfg.Override("sweep.levels", "--levels")
		}
	}
	dur("warmup", "sweep.warmup", &cfg.Sweep.Warmup, fl.warmup)
	dur("duration", "sweep.duration", &cfg.Sweep.Duration, fl.duration)
	dur("max-duration", "sweep.max_duration", &cfg.Sweep.MaxDuration, fl.maxDuration)
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
	if fl.set["input-tokens"] {
		cfg.Workload.InputTokens = sweep.Dist{Dist: "fixed", Mean: float64(fl.inputTokens)}
		cfg.Override("workload.input_tokens", "--input-tokens")
	}
	if fl.set["output-tokens"] {
		cfg.Workload.OutputTokens = sweep.Dist{Dist: "fixed", Mean: float64(fl.outputTokens)}
		cfg.Workload.FixedOutput = true
		cfg.Override("workload.output_tokens", "--output-tokens")
	}
	if cfg.Target.URL == "" {
		if u := e.getenv("OPENAI_BASE_URL"); u != "" {
			cfg.Target.URL = u
			cfg.Override("target.url", "OPENAI_BASE_URL")
		}
	}
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
	str("start-at", "shard.start_at", &cfg.Shard.StartAt, fl.startAt)
	if readErr != nil || flagErr != nil {
		// Every problem in one round: the keys that did not decode kept their defaults.
		return cfg, configProblems(e, "sweep", sweep.JoinProblems(readErr, flagErr, cfg.Validate()))
	}
	return cfg, nil
}

// configProblems prints every configuration problem on its own line, prefixed with the
// command, and returns exit 2.
func configProblems(e *env, cmd string, err error) error {
	for _, p := range sweep.Problems(err) {
		fmt.Fprintf(e.stderr, "kneecap: %s: %s\n", cmd, p)
	}
	return &exitError{code: exitUsage}
}

// parseLevels parses "1,2,4,8".
func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
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

// maxWorkers is the most workers this process runs at one level: the connection pool's size.
func maxWorkers(levels []int, shard sweep.ShardConfig) int {
	most := 1
	for _, c := range levels {
		if shard.Sharded() {
			_, c = sweep.Workers(c, shard.Index, shard.Count)
		}
		most = max(most, c)
	}
	return most
}

// resultsDirPath is -o, else output.dir, else runs/<UTC time>-<name>; a shard's is
// runs/<start_at>-<name>-shard-I-of-N, the same prefix on every shard.
func resultsDirPath(cfg sweep.Config, now time.Time) string {
	if cfg.Output.Dir != "" {
		return cfg.Output.Dir
	}
	suffix := ""
	if cfg.Shard.Sharded() {
		if at, err := cfg.Shard.Start(); err == nil {
			now = at
		}
		suffix = "-" + sweep.ShardDirName(cfg.Shard)
	}
	name := cfg.Name
	if name == "" {
		name = cfg.Target.Model
		if name == "" {
			name = "sweep"
		}
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, filepath.Base(name))
	return filepath.Join("runs", now.UTC().Format("20060102T150405Z")+"-"+name+suffix)
}

// checkWritable creates dir if needed and checks that a file can be created in it and that it
// holds no run (the error then ends with advice). created reports whether dir did not exist
// before.
func checkWritable(dir, advice string) (created bool, err error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".kneecap-write-check*")
	if err != nil {
		if created {
			os.Remove(dir)
		}
		return false, fmt.Errorf("%s is not writable: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	for _, name := range []string{sweep.LevelsFile, sweep.RecordsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return false, fmt.Errorf("%s already holds a run (%s): %s", dir, name, advice)
		}
	}
	return created, nil
}

// preflight checks the endpoint before the sweep within preflightTimeout: GET /v1/models must
// list the model (when the server answers it), and one tiny streaming request must succeed.
// An unreachable or failing endpoint is exit 3 with one line naming the URL and the cause.
func preflight(ctx context.Context, e *env, client *openai.Client, cfg sweep.Config, endpoint string) error {
	pctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	unreachable := func(cause string) error {
		return withCode(exitUnreachable, fmt.Errorf("sweep: preflight: %s: %s", endpoint, cause))
	}
	models, merr := client.Models(pctx)
	if merr == nil && len(models) > 0 && !slices.Contains(models, cfg.Target.Model) {
		return usageError("sweep: preflight: %s does not serve model %q; it serves: %s",
			endpoint, cfg.Target.Model, strings.Join(models, ", "))
	}
	if merr != nil && pctx.Err() != nil {
		return unreachable(fmt.Sprintf("no answer within %s (%v)", preflightTimeout, merr))
	}
	req := sweep.Request{Prompt: "Reply with one word: ok", PromptTokens: 6, MaxTokens: 2}
	var rec sweep.Record
	client.Do(pctx, &req, &rec)
	if !rec.OK() {
		cause := rec.Error
		if cause == "" {
			cause = string(rec.Status)
		}
		if rec.Status == sweep.StatusCancelled && pctx.Err() != nil && ctx.Err() == nil {
			cause = fmt.Sprintf("no complete answer within %s", preflightTimeout)
		}
		if merr != nil && rec.ErrorClass != sweep.ErrConnect && rec.ErrorClass != sweep.ErrTimeout {
			cause += fmt.Sprintf(" (and GET /models: %v)", merr)
		}
		if rec.ErrorClass != "" {
			cause = string(rec.ErrorClass) + ": " + cause
		}
		return unreachable(strings.ReplaceAll(cause, "\n", " "))
	}
	if merr != nil {
		fmt.Fprintf(e.stderr, "kneecap: warning: GET %s/models failed (%v); the probe request worked, continuing\n", endpoint, merr)
	}
	fmt.Fprintf(e.stderr, "kneecap: preflight ok: model %s, probe TTFT %s\n", cfg.Target.Model, rec.TTFT.Round(100*time.Microsecond))
	return nil
}

// afterSweep runs once the sweep has ended (also after an interrupt): it reads the results
// directory back, analyzes it exactly as `kneecap analyze DIR` would, and writes
// analysis.json, summary.csv, the charts and the reports into it, then prints the answer.
func afterSweep(e *env, dirPath string, cfg sweep.Config) error {
	res, err := sweep.ReadResults(dirPath)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	fmt.Fprintf(e.stdout, "%s: model %s at %s, %d levels, stopped: %s\n\n",
		strings.TrimSpace("kneecap sweep "+res.Config.Name), res.Config.Target.Model, res.Endpoint, len(res.Levels), res.StopReason)
	result := summary.FromResults(res).Analyze(summary.ConfigOptions(cfg))
	if err := writeAnalysis(dirPath, result); err != nil {
		return err
	}
	if err := writeReports(e, result, dirPath); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "results: %s\n", dirPath)
	return nil
}

// startScraper starts scraping the server's Prometheus metrics every sc.Interval for the
// whole sweep; each sample is appended to the directory's server_metrics.jsonl as it is
// taken. stop ends the scraping goroutine, waits for it, and reports failed scrapes and
// write errors.
func startScraper(ctx context.Context, sc sweep.ServerMetricsConfig, dir *sweep.Dir) (sweep.WindowSummarizer, func() error, error) {
	s, err := sweep.NewScraper(sc, nil)
	if err != nil {
		return nil, nil, usageError("sweep: server_metrics: %w", err)
	}
	w, err := dir.ServerMetrics()
	if err != nil {
		return nil, nil, err
	}
	s.Record(w)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(sctx) // returns nil when sctx is done; scrape failures are counted
	}()
	stop := func() error {
		cancel()
		<-done
		var errs []error
		if n, last := s.Errors(); n > 0 {
			// last names the URL without credentials; sc.URL may hold them.
			errs = append(errs, fmt.Errorf("%d of %d scrapes failed, last: %w", n, n+len(s.Samples()), last))
		}
		return errors.Join(append(errs, s.RecordErr())...)
	}
	return s, stop, nil
}
