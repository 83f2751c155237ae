// Package launch holds the steps that take a sweep from its configuration to its first level
// (DESIGN §2, §3.1): the plan of levels or rates (given, a trace's time scales, or planned by
// the --rates auto probe), resume, the client's limits, the workload and its prompt sizing,
// the results directory, the target (an endpoint, or the simulator in-process), its preflight
// and what the server says it is, and the sweep.Plan the controller runs. cmd/kneecap parses
// the flags into a configuration, calls these steps and prints what they return; each step
// says what it does on Env.Log, and its errors carry their exit status (exit.Error).
package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
	"github.com/kneecap/kneecap/workload/hftokenizer"
)

// Env is what the launch steps use of the command's process.
type Env struct {
	// Log gets the steps' console lines ("kneecap: …", stderr).
	Log io.Writer
	// Getenv reads an environment variable (target.api_key_env's).
	Getenv func(string) string
	// Interrupt is done at the first interrupt: the --rates auto probe stops with it.
	Interrupt context.Context
}

// Sweep is a sweep made ready to run: its configuration, levels, schedule and workload, and
// its results directory (reserved, created once the target has passed the preflight; or
// reopened for --resume with the levels done so far).
type Sweep struct {
	// Env is where the steps print and what they read; the command gives it the redacting
	// writer once the secrets are known (Secrets).
	Env
	Cfg config.Config
	// Levels are the planned concurrencies; a rate sweep's is its cap on requests in flight,
	// the streams the client must carry.
	Levels []int
	// Rates are a rate sweep's offered rates (nil until --rates auto has probed).
	Rates []float64
	// Resume is where a resumed run continues (zero for a new run).
	Resume sweep.Resume
	// Dir is the results directory once opened (a resumed run's from the start).
	Dir *rundir.Dir
	// Secrets are the API key and the configuration's secrets (config.Config.Secrets), kept
	// out of everything the sweep prints and writes.
	Secrets *redact.Secrets

	// probe is how --rates auto planned the rates (nil when they were given, or read back on
	// --resume); from is --from.
	probe *Probe
	from  string
	// trace is a trace replay's trace (nil: none); its rates are time scales × its mean rate.
	trace    *workload.Trace
	schedule *sweep.Schedule
	// clock serves and reads a shard's clock (clock.go); nil when not sharded.
	clock    *shardClock
	workload workload.Workload
	// tokenizer is workload.tokenizer, read (nil: not set or not used); sizing is how the
	// prompts are sized in the server's tokens, once sizePrompts has run.
	tokenizer *hftokenizer.Tokenizer
	sizing    *record.PromptSizing
	// hungClass is the error class of the preflight's probe that failed but was measured
	// anyway (preflight's hung): overlong, timeout, cancelled; "" when it succeeded.
	hungClass record.ErrorClass
	// probeElapsed is the time the probe took, which the rate sweep's budget counts.
	probeElapsed time.Duration
	// budget is target.answer_budget from Start (nil: off; budget.go).
	budget *record.AnswerBudget
	// done is what a resumed run had done (nil otherwise).
	done *rundir.Run
	// outDir and created are the reserved path of a new results directory and whether it did
	// not exist before.
	outDir  string
	created bool
}

// New makes the sweep of cfg ready to run; from is --from (--rates auto's closed-loop run).
// Everything that can be refused is refused here, before anything is created or sent: the
// configuration (every problem at once, exit 2), a shard's start time that has passed, a bad
// dataset or trace, a level larger than the process can carry (checkLimits), a results
// directory that is not writable or already holds a run. A scenario grid's configuration is
// only validated: each scenario's sweep is made ready by itself (Ready).
func New(env Env, cfg config.Config, from string) (*Sweep, error) {
	s := &Sweep{Env: env, Cfg: cfg, from: from}
	return s.prepare()
}

// Reopen makes the interrupted run in dir ready to continue, as New: its config.yaml is the
// configuration, with override applied (only --url and --header may change: an in-process
// simulator gets a new port anyway, and secret headers are REDACTED in config.yaml). A
// finished run, or a shard's, cannot be resumed (exit 2).
func Reopen(env Env, dir string, override func(*config.Config)) (*Sweep, error) {
	s := &Sweep{Env: env}
	if err := s.reopen(dir, override); err != nil {
		return nil, err
	}
	return s.prepare()
}

// Ready makes the sweep of cfg, a valid configuration (a grid's scenario), ready to run.
func Ready(env Env, cfg config.Config) (*Sweep, error) {
	s := &Sweep{Env: env, Cfg: cfg}
	if err := s.ready(); err != nil {
		return nil, err
	}
	return s, nil
}

// prepare validates the configuration and, unless it is a grid's, makes the sweep ready.
func (s *Sweep) prepare() (*Sweep, error) {
	if err := s.Cfg.Validate(); err != nil {
		s.Release()
		return nil, ConfigProblems(s.Log, "sweep", err)
	}
	if s.Cfg.Grid() {
		return s, nil
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	return s, nil
}

// ready makes the sweep of a valid configuration ready to run: its secrets, the header and
// level checks, the workload, and its results directory reserved (unless reopened).
func (s *Sweep) ready() error {
	var err error
	s.Secrets = redact.NewSecrets(s.Cfg.Secrets()...)
	if s.Cfg.Target.APIKeyEnv != "" {
		s.Secrets = s.Secrets.With(s.Getenv(s.Cfg.Target.APIKeyEnv))
	}
	if err := checkHeaderAuth(s.apiKey(), s.Cfg); err != nil {
		s.Release()
		return err
	}
	if err := s.plan0(); err != nil {
		s.Release()
		return err
	}
	if err := s.checkLimits(); err != nil {
		s.Release()
		return err
	}
	if s.Dir == nil {
		s.outDir = rundir.DefaultPath(s.Cfg, time.Now())
		advice := fmt.Sprintf("continue it with --resume %s, or choose another -o", s.outDir)
		if s.Cfg.Shard.Sharded() {
			advice = "give each shard its own -o" // a shard cannot be resumed
		}
		if s.created, err = rundir.CheckWritable(s.outDir, advice); err != nil {
			return exit.Usagef("sweep: results directory: %w", err)
		}
	}
	if err := s.listenClock(); err != nil {
		s.Release()
		return err
	}
	return nil
}

// reopen reopens the interrupted run in dir, whose config.yaml is the configuration.
func (s *Sweep) reopen(dir string, override func(*config.Config)) error {
	// Resume refuses a finished run (rundir.ErrFinished) before it rewrites anything.
	if head, err := rundir.ReadMeta(dir); err == nil && head.Config.Shard.Sharded() {
		return exit.Usagef("sweep: --resume %s: shard %s ran on a schedule shared with the other shards, which has passed: run every shard again with a new --start-at",
			dir, head.Config.Shard)
	} else if err == nil && head.Shards > 0 {
		return exit.Usagef("sweep: --resume %s: it merges %d shards; one process cannot continue their sweep: run every shard again with a new --start-at",
			dir, head.Shards)
	}
	d, done, err := rundir.Resume(dir)
	if err != nil {
		return exit.Usagef("sweep: %w", err)
	}
	s.Dir, s.done, s.Cfg = d, done, done.Config
	override(&s.Cfg)
	if err := RedactedHeaders(dir, s.Cfg); err != nil {
		s.Release()
		return err
	}
	return nil
}

// plan0 expands the levels and works out the resume point, the shard schedule and the
// workload of a valid configuration.
func (s *Sweep) plan0() error {
	levels, err := s.Cfg.Sweep.Levels.Expand()
	if s.Cfg.Sweep.RateMode() {
		levels, err = s.planRates() // its errors say what they are
	} else if err != nil { // Validate has checked the levels
		err = exit.Usagef("sweep: levels: %w", err)
	}
	if err != nil {
		return err
	}
	s.Levels = levels
	if s.done != nil && !(s.Cfg.Sweep.RateMode() && s.Rates == nil) { // else its probe runs again: a fresh start
		judge := analysis.StopRules{Rules: s.Cfg.Sweep.Stop, API: s.Cfg.Target.API}
		planned := levels
		if s.Cfg.Sweep.RateMode() {
			planned = make([]int, len(s.Rates)) // PlanResume counts the planned levels
		}
		if s.Resume, err = sweep.PlanResume(planned, s.done.Levels, s.Cfg.Sweep, judge); err != nil {
			return exit.Usagef("sweep: resume %s: %w", s.done.Dir, err)
		}
	}
	if sh := s.Cfg.Shard; sh.Sharded() {
		at, _ := sh.Start() // Validate has checked it
		if late := time.Since(at); late > 0 {
			return exit.Usagef("sweep: shard %s: start_at %s passed %s ago: every shard must be started before it; choose a later time",
				sh, sh.StartAt, late.Round(time.Second))
		}
		s.schedule = &sweep.Schedule{Start: at, Shard: sh.Index, Shards: sh.Count}
		s.schedule.Clock = s.readClock
		if s.trace != nil {
			if err := sweep.TraceProblem(s.trace, s.Cfg.Sweep, s.Rates); err != nil {
				return exit.Usagef("sweep: shard %s: %w", sh, err)
			}
		}
	}
	// The workload (a dataset is read here) before anything is created: a bad dataset is a
	// usage error that leaves nothing behind.
	if s.trace != nil {
		s.workload, err = workload.NewTraceWorkload(s.Cfg.Workload, s.Cfg.Target.API, s.trace)
	} else {
		s.workload, err = workload.NewWorkload(s.Cfg.Workload, s.Cfg.Target.API)
	}
	if err != nil {
		return exit.Usagef("%w", err)
	}
	if w := workload.SkipWarning(s.workload); w != "" {
		fmt.Fprintln(s.Log, "kneecap: warning: "+w)
	}
	return s.loadTokenizer()
}

// openDir creates the new results directory (config.yaml, an empty levels.json), or records
// the endpoint of a resumed run (an in-process simulator has a new port).
func (s *Sweep) openDir(endpoint string) error {
	if s.Dir != nil {
		s.Dir.SetSecrets(s.Secrets)
		s.Dir.SetEndpoint(endpoint)
		return s.setTrace(s.Dir)
	}
	dir, err := rundir.Create(s.outDir, s.Cfg, endpoint, time.Now())
	if err != nil {
		return exit.Usagef("sweep: %w", err)
	}
	dir.SetSecrets(s.Secrets)
	s.Dir = dir
	return s.setTrace(dir)
}

// Release stops serving a shard's clock, and closes the results directory, or removes the
// reserved one when nothing was written into it (a refused or unreachable target leaves no
// empty directory behind).
func (s *Sweep) Release() {
	s.closeClock()
	switch {
	case s.Dir != nil:
		s.Dir.Close()
	case s.created:
		os.Remove(s.outDir)
	}
}

// ConfigProblems prints every configuration problem on its own line on w, prefixed with the
// command, and returns exit 2. A problem that quotes a value loses the userinfo and secret
// query values of any URL in it (redact.Text).
func ConfigProblems(w io.Writer, cmd string, err error) error {
	for _, p := range config.Problems(err) {
		fmt.Fprintf(w, "kneecap: %s: %s\n", cmd, redact.Text(p))
	}
	return exit.Printed(exit.Usage)
}
