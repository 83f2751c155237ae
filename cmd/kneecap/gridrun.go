package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/rundir"
)

// scenarioFault is what went wrong with a scenario in this command: its grid status (failed
// or unreachable) and why.
type scenarioFault struct{ status, reason string }

// runGrid runs a new scenario grid: its directory (new or empty) gets config.yaml and
// scenarios.json, then each scenario's sweep runs into DIR/<name>/ in turn, and the combined
// files are written after the last, or after the one that stopped the grid (an interrupt:
// exit 130, or a server that stopped answering: exit 3; continue with --resume DIR).
func runGrid(ctx context.Context, e *env, fl *sweepFlags, cfg config.Config) error {
	if fl.format != "text" {
		return cmdUsageError("sweep", "sweep: --format %s: a scenario grid prints its scenarios' summaries and its table of knees; read each DIR/NAME/analysis.json", fl.format)
	}
	dir := rundir.DefaultPath(cfg, time.Now())
	if isGridDir(dir) {
		return usageError("sweep: results directory: %s already holds a scenario grid: continue it with --resume %s, or choose another -o", dir, dir)
	}
	if _, err := rundir.CheckWritable(dir, "choose another -o"); err != nil {
		return usageError("sweep: results directory: %w", err)
	}
	warnOverridden(e, fl, cfg)
	if err := writeGridConfig(dir, cfg); err != nil {
		return err
	}
	if err := writeGridDoc(dir, cfg, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "kneecap: scenario grid of %d scenarios (%s), results in %s\n", len(cfg.Scenarios), scenarioNames(cfg), dir)
	return runScenarios(ctx, e, fl, dir, cfg)
}

// resumeGrid continues the grid in --resume DIR: finished scenarios are skipped, an interrupted
// one is resumed (its own --resume), the rest run (one the server stopped, or that failed, again
// from the start, its directory kept as NAME~1); then the combined files are rewritten. A
// scenario that has run but whose configuration in DIR/config.yaml no longer matches its own
// is refused (exit 2).
func resumeGrid(ctx context.Context, e *env, fl *sweepFlags) error {
	if err := checkResumeFlags(fl); err != nil {
		return err
	}
	if fl.format != "text" {
		return cmdUsageError("sweep", "sweep: --format %s: a scenario grid prints its scenarios' summaries and its table of knees", fl.format)
	}
	dir := fl.resume
	cfg, err := config.Read(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return usageError("sweep: --resume %s: %w", dir, err)
	}
	if fl.set["url"] {
		cfg.Target.URL = fl.url
		cfg.Override("target.url", "--url")
	}
	fl.headers.apply(&cfg)
	if err := redactedHeaders(dir, cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return configProblems(e, "sweep", err)
	}
	if !cfg.Grid() {
		return usageError("sweep: --resume %s: its config.yaml has no scenarios", dir)
	}
	warnStrayDirs(e, dir, cfg)
	fmt.Fprintf(e.stderr, "kneecap: resuming scenario grid %s (%s)\n", dir, scenarioNames(cfg))
	return runScenarios(ctx, e, fl, dir, cfg)
}

// runScenarios runs every scenario of cfg not yet finished in dir, in order, once every one of
// them is ready (prepareScenarios: anything refused is refused before anything is sent), then
// writes the grid's files and prints its table of knees. scenarios.json is rewritten after
// each scenario. A scenario that fails is recorded (failed, and why) and the next one runs;
// an interrupt (exit 130) or a server that cannot be reached (exit 3) stops the grid.
func runScenarios(ctx context.Context, e *env, fl *sweepFlags, dir string, cfg config.Config) error {
	preps, err := prepareScenarios(e, fl, dir, cfg)
	if err != nil {
		return err
	}
	faults := map[string]scenarioFault{}
	var failed []string
	var stop error
	for i, sc := range cfg.Scenarios {
		s := preps[i]
		switch {
		case s == nil:
			fmt.Fprintf(e.stderr, "kneecap: scenario %s (%d of %d) finished before: skipped\n", sc.Name, i+1, len(cfg.Scenarios))
			continue
		case stop != nil:
			s.release()
			continue
		}
		fmt.Fprintf(e.stderr, "kneecap: scenario %s (%d of %d): %s\n", sc.Name, i+1, len(cfg.Scenarios), shapeOf(s.cfg))
		err := runSweep(ctx, e, fl, s)
		stop = scenarioOutcome(e, err, ctx.Err() != nil || e.interrupt.Err() != nil, sc.Name, faults)
		if _, bad := faults[sc.Name]; bad && stop == nil {
			failed = append(failed, sc.Name)
		}
		if err := writeGridDoc(dir, cfg, gridScenarios(dir, cfg, faults)); err != nil && stop == nil {
			stop = err
		}
	}
	if err := writeGrid(e, dir, cfg, faults); err != nil && stop == nil {
		stop = err
	}
	if stop != nil {
		return gridStopped(stop, dir, cfg)
	}
	if len(failed) > 0 {
		return withCode(exitFailure, fmt.Errorf("sweep: %d of %d scenarios failed: %s (scenarios.json says why; run them again with --resume %s)",
			len(failed), len(cfg.Scenarios), strings.Join(failed, ", "), dir))
	}
	return nil
}

// scenarioOutcome classifies what scenario name's sweep returned (err; interrupted: an
// interrupt came): nil to carry on (err nil, or a failure of this scenario alone, recorded in
// faults and printed), or the error that stops the grid (an interrupt, an unreachable server).
func scenarioOutcome(e *env, err error, interrupted bool, name string, faults map[string]scenarioFault) error {
	code := exitCode(err)
	switch {
	case err == nil && !interrupted:
		return nil
	case code == exitInterrupted || interrupted:
		return withCode(exitInterrupted, &gridStop{name: name, err: err})
	case code == exitUnreachable:
		faults[name] = scenarioFault{gridUnreachable, reasonOf(err)}
		return withCode(exitUnreachable, &gridStop{name: name, err: err})
	}
	faults[name] = scenarioFault{gridFailed, reasonOf(err)}
	fmt.Fprintf(e.stderr, "kneecap: scenario %s failed: %s; on with the next\n", name, reasonOf(err))
	return nil
}

// gridStop is what stopped a grid in scenario name: err (nil: an interrupt after it ended).
type gridStop struct {
	name string
	err  error
}

func (g *gridStop) Error() string {
	switch {
	case g.err == nil:
		return "sweep interrupted after scenario " + g.name
	case exitCode(g.err) == exitInterrupted:
		return "sweep interrupted in scenario " + g.name
	}
	return fmt.Sprintf("scenario %s: %s", g.name, reasonOf(g.err))
}

func (g *gridStop) Unwrap() error { return g.err }

// gridStopped is the error of a grid that stop stopped, with the --resume hint when a
// scenario is left to run.
func gridStopped(stop error, dir string, cfg config.Config) error {
	var gs *gridStop
	if !errors.As(stop, &gs) {
		return stop
	}
	msg := gs.Error() + ": results written to " + dir
	if gridLeft(dir, cfg) {
		msg += " (continue the grid with --resume " + dir + ")"
	}
	return withCode(exitCode(stop), errors.New(msg))
}

// gridLeft reports whether a scenario of the grid in dir has not finished.
func gridLeft(dir string, cfg config.Config) bool {
	for _, sc := range cfg.Scenarios {
		if st, _ := scenarioStatus(filepath.Join(dir, sc.Name)); st != gridFinished {
			return true
		}
	}
	return false
}

// reasonOf is err's message for scenarios.json ("refused" when it was printed already).
func reasonOf(err error) string {
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return fmt.Sprintf("refused (exit %d; the problems are printed above)", ee.code)
	}
	return err.Error()
}

// prepareScenarios makes every scenario of the grid in dir that is to run ready (nil for a
// finished one): an interrupted one reopened (its --resume), one the server stopped or that
// failed moved aside (NAME~1) and started again, the others new. Every problem of every
// scenario is refused at once (exit 2, nothing released kept) before the first sweep.
func prepareScenarios(e *env, fl *sweepFlags, dir string, cfg config.Config) ([]*sweepPrep, error) {
	preps := make([]*sweepPrep, len(cfg.Scenarios))
	var probs []error
	printed := false
	for i, sc := range cfg.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		s, err := prepareScenario(e, fl, sub, sc.Name, cfg.ScenarioConfig(i))
		var ee *exitError
		switch {
		case err == nil:
			preps[i] = s
		case errors.As(err, &ee) && ee.err == nil:
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
			s.release()
		}
	}
	if len(probs) == 0 {
		return nil, &exitError{code: exitUsage}
	}
	return nil, withCode(exitUsage, errors.Join(probs...))
}

// prepareScenario makes scenario name (configuration want, directory sub) ready to run, or
// returns nil for a finished one.
func prepareScenario(e *env, fl *sweepFlags, sub, name string, want config.Config) (*sweepPrep, error) {
	status, reason := scenarioStatus(sub)
	if status == gridFinished || status == gridInterrupted { // the others start again
		if err := sameScenarioConfig(sub, name, want); err != nil {
			return nil, err
		}
	}
	switch status {
	case gridFinished:
		return nil, nil
	case gridInterrupted:
		flc := *fl
		flc.resume = sub
		return prepareSweep(e, &flc)
	case gridUnreachable, gridFailed:
		kept, err := moveAside(sub)
		if err != nil {
			return nil, usageError("sweep: %w", err)
		}
		fmt.Fprintf(e.stderr, "kneecap: scenario %s stopped before (%s): run again, its results kept in %s\n", name, reason, kept)
	}
	s := &sweepPrep{cfg: want}
	s.cfg.Output.Dir = sub
	if err := s.ready(e); err != nil {
		return nil, err
	}
	return s, nil
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

// sameScenarioConfig refuses a scenario that has run (sub/config.yaml) when the grid's
// configuration of it (want) now differs in what it measures (configDiff), naming the keys.
func sameScenarioConfig(sub, name string, want config.Config) error {
	head, err := rundir.ReadMeta(sub)
	if err != nil {
		return nil
	}
	keys := configDiff(head.Config, want)
	if len(keys) == 0 {
		return nil
	}
	list := strings.Join(keys, ", ")
	if len(keys) > 6 {
		list = fmt.Sprintf("%s and %d more keys", strings.Join(keys[:6], ", "), len(keys)-6)
	}
	return usageError("sweep: --resume: scenario %s ran with another configuration than the grid's config.yaml now gives it: %s differ from %s; restore them, or start a new grid",
		name, list, filepath.Join(sub, rundir.ConfigFile))
}

// measuredKeys are the sections of a configuration that say what a sweep measures: those a
// resumed scenario's must keep (a run records the others with what it found: the simulator's
// profile filled in, the model the server serves, a new URL).
var measuredKeys = []string{"workload", "sweep", "slo"}

// configDiff lists the keys (a.b.c) of measuredKeys whose values differ between a and b.
func configDiff(a, b config.Config) []string {
	fa, fb := flatConfig(a), flatConfig(b)
	seen := map[string]bool{}
	var out []string
	measured := func(k string) bool {
		top, _, _ := strings.Cut(k, ".")
		return slices.Contains(measuredKeys, top)
	}
	for _, m := range []map[string]string{fa, fb} {
		for k := range m {
			if seen[k] || fa[k] == fb[k] || !measured(k) {
				continue
			}
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// flatConfig is c (redacted) as YAML keys to values; a list is one value.
func flatConfig(c config.Config) map[string]string {
	out := map[string]string{}
	b, err := yaml.Marshal(c.Redacted())
	if err != nil {
		return out
	}
	var v any
	if yaml.Unmarshal(b, &v) != nil {
		return out
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
			return
		}
		out[prefix] = fmt.Sprint(v)
	}
	walk("", v)
	return out
}

// warnOverridden warns about each flag that sets a workload key some scenarios set too (their
// value wins for them).
func warnOverridden(e *env, fl *sweepFlags, cfg config.Config) {
	for _, f := range []struct {
		flag, key string
		sets      func(config.Scenario) bool
	}{
		{"input-tokens", "input_tokens", func(s config.Scenario) bool { return s.InputTokens != nil }},
		{"output-tokens", "output_tokens", func(s config.Scenario) bool { return s.OutputTokens != nil }},
		{"dataset", "dataset", func(s config.Scenario) bool { return s.Dataset != nil }},
		{"levels", "levels", func(s config.Scenario) bool { return s.Levels != nil }},
	} {
		if !fl.set[f.flag] {
			continue
		}
		var names []string
		for _, sc := range cfg.Scenarios {
			if f.sets(sc) {
				names = append(names, sc.Name)
			}
		}
		switch {
		case len(names) == len(cfg.Scenarios):
			fmt.Fprintf(e.stderr, "kneecap: warning: --%s applies to no scenario: every scenario sets its own %s (%s)\n", f.flag, f.key, strings.Join(names, ", "))
		case len(names) > 0:
			fmt.Fprintf(e.stderr, "kneecap: warning: --%s does not apply to scenarios %s: they set their own %s\n", f.flag, strings.Join(names, ", "), f.key)
		}
	}
}

// warnStrayDirs warns about each results directory in the grid's dir that is no scenario of
// cfg (a scenario removed from config.yaml): left out of the grid, not removed.
func warnStrayDirs(e *env, dir string, cfg config.Config) {
	names := map[string]bool{}
	for _, sc := range cfg.Scenarios {
		names[sc.Name] = true
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, en := range ents {
		n := en.Name()
		if !en.IsDir() || names[n] || strings.Contains(n, "~") {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, n, rundir.LevelsFile)); err == nil {
			fmt.Fprintf(e.stderr, "kneecap: warning: %s holds a run but is no scenario of %s: left out of the grid\n",
				filepath.Join(dir, n), filepath.Join(dir, rundir.ConfigFile))
		}
	}
}

// checkResumeFlags refuses the flags --resume does not take (only --url may change).
func checkResumeFlags(fl *sweepFlags) error {
	for _, name := range append(append([]string{"c", "o", "model", "api", "levels", "warmup", "duration", "max-duration",
		"min-requests", "input-tokens", "output-tokens", "name", "shard", "start-at", "refine", "retry-excluded"}, rateFlagNames...), traceFlagNames...) {
		if fl.set[name] {
			return cmdUsageError("sweep", "sweep: --resume takes the configuration from %s; %s cannot change it", fl.resume, dashes(name))
		}
	}
	return nil
}
