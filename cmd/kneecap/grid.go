package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/grid"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
)

// runGrid runs a new scenario grid: its directory (new or empty) gets config.yaml and
// scenarios.json, then each scenario's sweep runs into DIR/<name>/ in turn, and the combined
// files are written after the last, or after the one that stopped the grid (an interrupt:
// exit 130, or a server that stopped answering: exit 3; continue with --resume DIR).
func runGrid(ctx context.Context, e *env, fl *sweepFlags, cfg config.Config) error {
	if fl.format != "text" {
		return cmdUsageError("sweep", "sweep: --format %s: a scenario grid prints its scenarios' summaries and its table of knees; read each DIR/NAME/analysis.json", fl.format)
	}
	dir, err := grid.Reserve(cfg)
	if err != nil {
		return err
	}
	warnOverridden(e, fl, cfg)
	if err := grid.Create(dir, cfg); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "kneecap: scenario grid of %d scenarios (%s), results in %s\n", len(cfg.Scenarios), grid.Names(cfg), dir)
	return runScenarios(ctx, e, fl, dir, cfg)
}

// resumeGrid continues the grid in --resume DIR (grid.Run): finished scenarios are skipped, an
// interrupted one is resumed (its own --resume), the rest run (one the server stopped, or that
// failed, again from the start, its directory kept as NAME~1); then the combined files are
// rewritten. A scenario that has run but whose configuration in DIR/config.yaml no longer
// matches its own is refused (exit 2).
func resumeGrid(ctx context.Context, e *env, fl *sweepFlags) error {
	if err := checkResumeFlags(e, fl); err != nil {
		return err
	}
	if fl.format != "text" {
		return cmdUsageError("sweep", "sweep: --format %s: a scenario grid prints its scenarios' summaries and its table of knees", fl.format)
	}
	cfg, err := grid.Reopen(e.stderr, fl.resume, fl.resumeOverrides)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "kneecap: resuming scenario grid %s (%s)\n", fl.resume, grid.Names(cfg))
	return runScenarios(ctx, e, fl, fl.resume, cfg)
}

// runScenarios runs the scenarios of the grid in dir (grid.Run), each with runSweep, then
// writes the grid's combined files and prints its table of knees. A failed scenario lets the
// next one run; an interrupt, an unreachable server or one that answered nothing at all
// stops the grid.
func runScenarios(ctx context.Context, e *env, fl *sweepFlags, dir string, cfg config.Config) error {
	out, err := grid.Run(ctx, e.launch(), dir, cfg, fl.resumeOverrides, func(s *launch.Sweep) error {
		return runSweep(ctx, e, fl, s)
	})
	if err != nil {
		return err
	}
	return out.Err(dir, cfg, writeGrid(e, dir, cfg, out.Faults))
}

// writeGrid writes the grid's combined files (grid.Write) and prints its table of knees.
func writeGrid(e *env, dir string, cfg config.Config, faults map[string]grid.Fault) error {
	title, scs, err := grid.Write(dir, cfg, faults)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	if err := report.GridConsole(e.stdout, title+": "+dir, scs); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\nreport: %s\n", filepath.Join(dir, rundir.ReportHTMLFile))
	return nil
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

// resumeFlags are the flags --resume takes: those resumeOverrides applies (--url: an
// in-process simulator gets a new port anyway; --header: secret headers are REDACTED in
// config.yaml) and those of the console. Any other would change the run it continues, or be
// ignored without a word.
var resumeFlags = map[string]bool{"resume": true, "url": true, "header": true, "format": true, "wide": true}

// checkResumeFlags refuses every flag --resume does not take (resumeFlags), naming the first
// by name (an --slo* or --plan-* flag with the analyze command that takes it), and reads the URL of --url env (resolveURL).
func checkResumeFlags(e *env, fl *sweepFlags) error {
	for _, name := range slices.Sorted(maps.Keys(fl.set)) {
		switch {
		case resumeFlags[name]:
		case strings.HasPrefix(name, "slo"):
			return cmdUsageError("sweep", "sweep: --resume takes the configuration from %s; %s cannot change it (judge the finished run by other SLOs with kneecap analyze %s %s …)",
				fl.resume, dashes(name), fl.resume, dashes(name))
		case isPlanFlag(name):
			return cmdUsageError("sweep", "sweep: --resume takes the configuration from %s; %s cannot change it (plan the finished run with kneecap analyze %s %s …)",
				fl.resume, dashes(name), fl.resume, dashes(name))
		default:
			return cmdUsageError("sweep", "sweep: --resume takes the configuration from %s; %s cannot change it", fl.resume, dashes(name))
		}
	}
	if err := fl.resolveURL(e); err != nil {
		return cmdUsageError("sweep", "sweep: %v", err)
	}
	return nil
}

// isPlanFlag reports whether name is one of the --plan-* flags (planFlags), which analyze
// takes too.
func isPlanFlag(name string) bool {
	var f planFlags
	return slices.ContainsFunc(f.each(), func(p planFlag) bool { return p.name == name })
}

// resumeOverrides applies to the configuration of a resumed run (or grid) the flags that may
// change it: --url (an in-process simulator gets a new port anyway) and --header (secret
// headers are REDACTED in config.yaml).
func (fl *sweepFlags) resumeOverrides(cfg *config.Config) {
	fl.applyURL(cfg)
	fl.headers.apply(cfg)
}

// quiet returns e with stdout discarded (a scenario's console summary inside a grid command).
func (e *env) quiet() *env {
	c := *e
	c.stdout = io.Discard
	return &c
}
