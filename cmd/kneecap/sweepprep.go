package main

import (
	"cmp"
	"fmt"
	"os"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
	"github.com/kneecap/kneecap/workload/hftokenizer"
)

// sweepPrep is a sweep made ready to run: its configuration, levels, schedule and workload,
// and its results directory (reserved, created once the target has passed the preflight; or
// reopened for --resume with the levels done so far).
type sweepPrep struct {
	cfg    config.Config
	levels []int
	// rates are a rate sweep's offered rates (nil until --rates auto has probed); levels then
	// holds its cap on requests in flight, the streams the client must carry. probe is how
	// --rates auto planned them (nil when they were given, or read back on --resume); from
	// is --from.
	rates []float64
	probe *probe
	from  string
	// trace is a trace replay's trace (nil: none); its rates are time scales × its mean rate.
	trace    *workload.Trace
	schedule *sweep.Schedule
	workload workload.Workload
	// tokenizer is workload.tokenizer, read (nil: not set or not used); sizing is how the
	// prompts are sized in the server's tokens, once sizePrompts has run.
	tokenizer *hftokenizer.Tokenizer
	sizing    *record.PromptSizing
	// probeElapsed is the time the probe took, which the rate sweep's budget counts.
	probeElapsed time.Duration
	// done and resume describe what a resumed run had done (nil and zero otherwise).
	done   *rundir.Run
	resume sweep.Resume
	// dir is the results directory once opened; outDir and created the reserved path of a new
	// one and whether it did not exist before.
	dir     *rundir.Dir
	outDir  string
	created bool
	// secrets are the API key and the configuration's secrets (config.Config.Secrets), kept
	// out of everything the sweep prints and writes.
	secrets *redact.Secrets
}

// prepareSweep turns the flags into a sweep ready to run. Everything that can be refused is
// refused here, before anything is created or sent: the configuration (every problem at
// once, exit 2), a run that cannot be resumed, a shard's start time that has passed, a bad
// dataset, a level larger than the process can carry (checkLimits), a results directory that
// is not writable or already holds a run.
func prepareSweep(e *env, fl *sweepFlags) (*sweepPrep, error) {
	s := &sweepPrep{}
	var err error
	if fl.resume != "" {
		err = s.reopen(fl)
	} else {
		s.cfg, err = sweepConfig(e, fl)
		s.from = fl.rate.from
	}
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Validate(); err != nil {
		s.release()
		return nil, configProblems(e, "sweep", err)
	}
	if s.cfg.Grid() {
		return s, nil // runGrid prepares each scenario's sweep (ready)
	}
	if err := s.ready(e); err != nil {
		return nil, err
	}
	return s, nil
}

// ready makes the sweep of a valid configuration ready to run: its secrets, the header and
// level checks, the workload, and its results directory reserved (unless reopened).
func (s *sweepPrep) ready(e *env) error {
	var err error
	s.secrets = redact.NewSecrets(s.cfg.Secrets()...)
	if s.cfg.Target.APIKeyEnv != "" {
		s.secrets = s.secrets.With(e.getenv(s.cfg.Target.APIKeyEnv))
	}
	if err := checkHeaderAuth(e, s.cfg); err != nil {
		s.release()
		return err
	}
	if err := s.plan0(); err != nil {
		s.release()
		return err
	}
	if err := s.checkLimits(e); err != nil {
		s.release()
		return err
	}
	if s.dir == nil {
		s.outDir = rundir.DefaultPath(s.cfg, time.Now())
		advice := fmt.Sprintf("continue it with --resume %s, or choose another -o", s.outDir)
		if s.cfg.Shard.Sharded() {
			advice = "give each shard its own -o" // a shard cannot be resumed
		}
		if s.created, err = rundir.CheckWritable(s.outDir, advice); err != nil {
			return usageError("sweep: results directory: %w", err)
		}
	}
	return nil
}

// reopen reopens the interrupted run of --resume DIR, whose config.yaml is the configuration
// (only --url may change: an in-process simulator gets a new port anyway).
func (s *sweepPrep) reopen(fl *sweepFlags) error {
	if err := checkResumeFlags(fl); err != nil {
		return err
	}
	// Resume refuses a finished run (rundir.ErrFinished) before it rewrites anything.
	if head, err := rundir.ReadMeta(fl.resume); err == nil && head.Config.Shard.Sharded() {
		return usageError("sweep: --resume %s: shard %s ran on a schedule shared with the other shards, which has passed: run every shard again with a new --start-at",
			fl.resume, head.Config.Shard)
	} else if err == nil && head.Shards > 0 {
		return usageError("sweep: --resume %s: it merges %d shards; one process cannot continue their sweep: run every shard again with a new --start-at",
			fl.resume, head.Shards)
	}
	dir, done, err := rundir.Resume(fl.resume)
	if err != nil {
		return usageError("sweep: %w", err)
	}
	s.dir, s.done, s.cfg = dir, done, done.Config
	if fl.set["url"] {
		s.cfg.Target.URL = fl.url
		s.cfg.Override("target.url", "--url")
	}
	fl.headers.apply(&s.cfg) // secret headers are REDACTED in config.yaml: given again
	if err := redactedHeaders(fl.resume, s.cfg); err != nil {
		s.release()
		return err
	}
	return nil
}

// plan0 expands the levels and works out the resume point, the shard schedule and the
// workload of a valid configuration.
func (s *sweepPrep) plan0() error {
	levels, err := s.cfg.Sweep.Levels.Expand()
	if s.cfg.Sweep.RateMode() {
		levels, err = s.planRates() // its errors say what they are
	} else if err != nil { // Validate has checked the levels
		err = usageError("sweep: levels: %w", err)
	}
	if err != nil {
		return err
	}
	s.levels = levels
	if s.done != nil && !(s.cfg.Sweep.RateMode() && s.rates == nil) { // else its probe runs again: a fresh start
		judge := analysis.StopRules{Rules: s.cfg.Sweep.Stop}
		planned := levels
		if s.cfg.Sweep.RateMode() {
			planned = make([]int, len(s.rates)) // PlanResume counts the planned levels
		}
		if s.resume, err = sweep.PlanResume(planned, s.done.Levels, s.cfg.Sweep, judge); err != nil {
			return usageError("sweep: resume %s: %w", s.done.Dir, err)
		}
	}
	if sh := s.cfg.Shard; sh.Sharded() {
		at, _ := sh.Start() // Validate has checked it
		if late := time.Since(at); late > 0 {
			return usageError("sweep: shard %s: start_at %s passed %s ago: every shard must be started before it; choose a later time",
				sh, sh.StartAt, late.Round(time.Second))
		}
		s.schedule = &sweep.Schedule{Start: at, Shard: sh.Index, Shards: sh.Count}
	}
	// The workload (a dataset is read here) before anything is created: a bad dataset is a
	// usage error that leaves nothing behind.
	if s.trace != nil {
		s.workload, err = workload.NewTraceWorkload(s.cfg.Workload, s.cfg.Target.API, s.trace)
	} else {
		s.workload, err = workload.NewWorkload(s.cfg.Workload, s.cfg.Target.API)
	}
	if err != nil {
		return usageError("%w", err)
	}
	return s.loadTokenizer()
}

// openDir creates the new results directory (config.yaml, an empty levels.json), or records
// the endpoint of a resumed run (an in-process simulator has a new port).
func (s *sweepPrep) openDir(endpoint string) error {
	if s.dir != nil {
		s.dir.SetSecrets(s.secrets)
		s.dir.SetEndpoint(endpoint)
		return s.setTrace(s.dir)
	}
	dir, err := rundir.Create(s.outDir, s.cfg, endpoint, time.Now())
	if err != nil {
		return usageError("sweep: %w", err)
	}
	dir.SetSecrets(s.secrets)
	s.dir = dir
	return s.setTrace(dir)
}

// release closes the results directory, or removes the reserved one when nothing was
// written into it (a refused or unreachable target leaves no empty directory behind).
func (s *sweepPrep) release() {
	switch {
	case s.dir != nil:
		s.dir.Close()
	case s.created:
		os.Remove(s.outDir)
	}
}

// plan builds the sweep's plan with its progress display, and prints how a shard's levels are
// scheduled and where a resumed run continues.
func (s *sweepPrep) plan(e *env) (sweep.Plan, *progress) {
	cfg := s.cfg
	prog := newProgress(e.stderr, e.stderrTTY, s.levels, cfg.Sweep)
	prog.added, prog.refine, prog.rates = s.resume.Added, cfg.Sweep.Refine, s.rates
	prog.width, prog.wide, prog.hit = e.columns, e.wide, expectsPrefixCache(&cfg, s.workload)
	plan := sweep.Plan{
		Levels:    s.levels,
		Protocol:  cfg.Sweep,
		Workload:  s.workload,
		ThinkTime: cfg.Workload.ThinkTime,
		Judge:     analysis.StopRules{Rules: cfg.Sweep.Stop},
		Observer:  prog,
		Schedule:  s.schedule,
	}
	if s.schedule != nil {
		plan.Judge = nil // the shards cannot agree on stop rules other than the budget
		fmt.Fprintln(e.stderr, "kneecap: "+s.schedule.Describe(cfg.Sweep, len(s.levels), cfg.Shard.String()))
	} else if cfg.Sweep.RateMode() {
		s.ratePlan(&plan, prog)
	} else if cfg.Sweep.Refine > 0 {
		refiner := limitedRefiner{analysis.NewRefiner(cfg.AnalysisOptions(), cfg.Sweep.Stop), s.streamCost()}
		plan.Refiner = announcingRefiner{refiner, prog}
		plan.Refine = cfg.Sweep.Refine
	}
	if s.done == nil {
		return plan, prog
	}
	plan.StartIndex, plan.Done = s.resume.StartIndex, s.done.Levels
	if s.resume.PlannedOver {
		stopped := ""
		if s.resume.Stopped != "" {
			stopped = " (stopped: " + s.resume.Stopped + ")"
		}
		fmt.Fprintf(e.stderr, "kneecap: resuming %s after its planned levels%s: %d of at most %d levels added so far\n",
			s.dir.Path(), stopped, s.resume.Added, cfg.Sweep.Refine)
	} else {
		fmt.Fprintf(e.stderr, "kneecap: resuming %s at level %d of %d (%s)\n",
			s.dir.Path(), plan.StartIndex+1, len(s.planned()), s.levelName(plan.StartIndex))
	}
	return plan, prog
}

// what names the levels the sweep is about to run: "levels [1 2 4], then up to 2 added".
func (s *sweepPrep) what(plan sweep.Plan) string {
	what := fmt.Sprintf("levels %v", s.levels[min(plan.StartIndex, len(s.levels)):])
	if s.trace != nil {
		what = s.traceWhat(plan.StartIndex)
	} else if s.cfg.Sweep.RateMode() {
		what = fmt.Sprintf("rates %v requests/s (%s arrivals, at most %d in flight)",
			s.rates[min(plan.StartIndex, len(s.rates)):], cmp.Or(s.cfg.Sweep.Arrival, sweep.ArrivalPoisson), s.cfg.Sweep.InFlightCap())
	}
	if plan.Refine > 0 {
		left := plan.Refine - s.resume.Added
		what += fmt.Sprintf(", then up to %d added", left)
		if plan.StartIndex >= len(s.planned()) {
			what = fmt.Sprintf("up to %d added levels", left)
		}
	}
	return what
}
