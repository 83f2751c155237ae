package grid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/rundir"
)

// Reserve returns the results directory of a new grid of cfg (rundir.DefaultPath), refused
// (exit 2) when it holds a grid or anything else.
func Reserve(cfg config.Config) (string, error) {
	dir := rundir.DefaultPath(cfg, time.Now())
	if IsDir(dir) {
		return "", exit.Usagef("sweep: results directory: %s already holds a scenario grid: continue it with --resume %s, or choose another -o", dir, dir)
	}
	if _, err := rundir.CheckWritable(dir, "choose another -o"); err != nil {
		return "", exit.Usagef("sweep: results directory: %w", err)
	}
	return dir, nil
}

// Create writes a new grid's config.yaml (redacted, which --resume DIR reads) and its
// scenarios.json, every scenario not run, into dir (Reserve).
func Create(dir string, cfg config.Config) error {
	if err := writeConfig(dir, cfg); err != nil {
		return err
	}
	return writeDoc(dir, cfg, nil)
}

// Reopen reads the grid in dir to continue it: its config.yaml, with override applied (only
// --url and --header may change), validated (every problem printed on log, exit 2), and warns
// on log about each results directory in dir that is no scenario of it (WarnStrayDirs).
func Reopen(log io.Writer, dir string, override func(*config.Config)) (config.Config, error) {
	cfg, err := config.Read(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return cfg, exit.Usagef("sweep: --resume %s: %w", dir, err)
	}
	override(&cfg)
	if err := launch.RedactedHeaders(dir, cfg); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, launch.ConfigProblems(log, "sweep", err)
	}
	if !cfg.Grid() {
		return cfg, exit.Usagef("sweep: --resume %s: its config.yaml has no scenarios", dir)
	}
	warnStrayDirs(log, dir, cfg)
	return cfg, nil
}

// Outcome is how the scenarios of a grid ran (Run).
type Outcome struct {
	// Faults are what went wrong with scenarios, by name: Write records them.
	Faults map[string]Fault
	// failed are the scenarios that failed, the grid going on with the next.
	failed []string
	// stop is what stopped the grid (nil: every scenario ran).
	stop error
}

// Run runs every scenario of cfg not yet finished in dir, in order, with sweep (which runs one
// scenario's sweep and releases it), once every one of them is ready (prepare: anything
// refused is refused before anything is sent; override is applied to a resumed scenario's
// configuration, as to the grid's). scenarios.json is rewritten after each scenario. A
// scenario that fails is recorded (failed, and why) and the next one runs; an interrupt (exit
// 130), a server that cannot be reached (exit 3) or one that answered nothing at all until the
// answer budget ran out (exit 1, launch.NeverAnsweredError: every scenario would wait it out)
// stops the grid. The error is the
// preparation's; the grid's own comes from Outcome.Err once its combined files are written.
func Run(ctx context.Context, env launch.Env, dir string, cfg config.Config, override func(*config.Config), sweep func(*launch.Sweep) error) (Outcome, error) {
	preps, err := prepare(env, override, dir, cfg)
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Faults: map[string]Fault{}}
	for i, sc := range cfg.Scenarios {
		s := preps[i]
		switch {
		case s == nil:
			fmt.Fprintf(env.Log, "kneecap: scenario %s (%d of %d) finished before: skipped\n", sc.Name, i+1, len(cfg.Scenarios))
			continue
		case o.stop != nil:
			s.Release()
			continue
		}
		fmt.Fprintf(env.Log, "kneecap: scenario %s (%d of %d): %s\n", sc.Name, i+1, len(cfg.Scenarios), shape(s.Cfg))
		err := sweep(s)
		o.stop = outcome(env.Log, err, ctx.Err() != nil || env.Interrupt.Err() != nil, sc.Name, o.Faults)
		if _, bad := o.Faults[sc.Name]; bad && o.stop == nil {
			o.failed = append(o.failed, sc.Name)
		}
		if err := writeDoc(dir, cfg, scenarios(dir, cfg, o.Faults)); err != nil && o.stop == nil {
			o.stop = err
		}
	}
	return o, nil
}

// Err is the grid's error once its combined files are written (werr: their error): what
// stopped it, with the --resume hint while a scenario is left to run, else a failure naming
// the scenarios that failed (exit 1), else nil.
func (o Outcome) Err(dir string, cfg config.Config, werr error) error {
	stop := o.stop
	if werr != nil && stop == nil {
		stop = werr
	}
	if stop != nil {
		return stopped(stop, dir, cfg)
	}
	if len(o.failed) > 0 {
		return exit.With(exit.Failure, fmt.Errorf("sweep: %d of %d scenarios failed: %s (scenarios.json says why; run them again with --resume %s)",
			len(o.failed), len(cfg.Scenarios), strings.Join(o.failed, ", "), dir))
	}
	return nil
}

// outcome classifies what scenario name's sweep returned (err; interrupted: an interrupt
// came): nil to carry on (err nil, or a failure of this scenario alone, recorded in faults and
// printed on log), or the error that stops the grid (an interrupt, an unreachable server, a
// server that answered nothing at all: launch.NeverAnsweredError).
func outcome(log io.Writer, err error, interrupted bool, name string, faults map[string]Fault) error {
	code := exit.Code(err)
	var silent *launch.NeverAnsweredError
	switch {
	case err == nil && !interrupted:
		return nil
	case code == exit.Interrupted || interrupted:
		return exit.With(exit.Interrupted, &stopError{name: name, err: err})
	case code == exit.Unreachable:
		faults[name] = Fault{Unreachable, reasonOf(err)}
		return exit.With(exit.Unreachable, &stopError{name: name, err: err})
	case errors.As(err, &silent):
		faults[name] = Fault{Failed, reasonOf(err)}
		return exit.With(exit.Failure, &stopError{name: name, err: err})
	}
	faults[name] = Fault{Failed, reasonOf(err)}
	fmt.Fprintf(log, "kneecap: scenario %s failed: %s; on with the next\n", name, reasonOf(err))
	return nil
}

// stopError is what stopped a grid in scenario name: err (nil: an interrupt after it ended).
type stopError struct {
	name string
	err  error
}

func (g *stopError) Error() string {
	switch {
	case g.err == nil:
		return "sweep interrupted after scenario " + g.name
	case exit.Code(g.err) == exit.Interrupted:
		return "sweep interrupted in scenario " + g.name
	}
	return fmt.Sprintf("scenario %s: %s", g.name, reasonOf(g.err))
}

func (g *stopError) Unwrap() error { return g.err }

// stopped is the error of a grid that stop stopped, with the --resume hint when a scenario is
// left to run.
func stopped(stop error, dir string, cfg config.Config) error {
	var gs *stopError
	if !errors.As(stop, &gs) {
		return stop
	}
	msg := gs.Error() + ": results written to " + dir
	if left(dir, cfg) {
		msg += " (continue the grid with --resume " + dir + ")"
	}
	return exit.With(exit.Code(stop), errors.New(msg))
}

// left reports whether a scenario of the grid in dir has not finished.
func left(dir string, cfg config.Config) bool {
	for _, sc := range cfg.Scenarios {
		if st, _ := Status(filepath.Join(dir, sc.Name)); st != Finished {
			return true
		}
	}
	return false
}

// reasonOf is err's message for scenarios.json ("refused" when it was printed already).
func reasonOf(err error) string {
	if exit.IsPrinted(err) {
		return fmt.Sprintf("refused (exit %d; the problems are printed above)", exit.Code(err))
	}
	return err.Error()
}

// prepare makes every scenario of the grid in dir that is to run ready (nil for a finished
// one): an interrupted one reopened (its --resume), one the server stopped or that failed
// moved aside (NAME~1) and started again, the others new. Every problem of every scenario is
// refused at once (exit 2, nothing released kept) before the first sweep.
func prepare(env launch.Env, override func(*config.Config), dir string, cfg config.Config) ([]*launch.Sweep, error) {
	preps := make([]*launch.Sweep, len(cfg.Scenarios))
	var probs []error
	printed := false
	for i, sc := range cfg.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		s, err := prepareScenario(env, override, sub, sc.Name, cfg.ScenarioConfig(i))
		switch {
		case err == nil:
			preps[i] = s
		case exit.IsPrinted(err):
			printed = true
		default:
			probs = append(probs, fmt.Errorf("scenario %s: %w", sc.Name, err))
		}
	}
	if len(probs) == 0 && !printed {
		return preps, nil
	}
	for _, s := range preps {
		if s != nil {
			s.Release()
		}
	}
	if len(probs) == 0 {
		return nil, exit.Printed(exit.Usage)
	}
	return nil, exit.With(exit.Usage, errors.Join(probs...))
}

// prepareScenario makes scenario name (configuration want, directory sub) ready to run, or
// returns nil for a finished one.
func prepareScenario(env launch.Env, override func(*config.Config), sub, name string, want config.Config) (*launch.Sweep, error) {
	status, reason := Status(sub)
	if status == Finished || status == Interrupted { // the others start again
		if err := sameConfig(sub, name, want); err != nil {
			return nil, err
		}
	}
	switch status {
	case Finished:
		return nil, nil
	case Interrupted:
		return launch.Reopen(env, sub, override)
	case Unreachable, Failed:
		kept, err := moveAside(sub)
		if err != nil {
			return nil, exit.Usagef("sweep: %w", err)
		}
		fmt.Fprintf(env.Log, "kneecap: scenario %s stopped before (%s): run again, its results kept in %s\n", name, reason, kept)
	}
	want.Output.Dir = sub
	return launch.Ready(env, want)
}

// moveAside renames the scenario directory sub to the first free sub~N (a scenario name has
// no '~').
func moveAside(sub string) (string, error) {
	for k := 1; ; k++ {
		p := fmt.Sprintf("%s~%d", sub, k)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.Rename(sub, p); err != nil {
			return "", err
		}
		return p, nil
	}
}
