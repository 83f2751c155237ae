package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// A scenario grid's results directory (DESIGN §5.3): DIR/<name>/ is each scenario's ordinary
// results directory; DIR holds config.yaml (the grid's, redacted), scenarios.json and the
// combined report.md, report.html and pareto.png / pareto.svg.
const (
	// scenariosFile marks a grid's directory and lists its scenarios and their answers.
	scenariosFile = "scenarios.json"
	// gridSchema is the schema tag of scenarios.json.
	gridSchema = "kneecap.grid/v1"
)

// gridDoc is scenarios.json.
type gridDoc struct {
	Schema    string      `json:"schema"`
	Name      string      `json:"name,omitempty"`
	Scenarios []gridEntry `json:"scenarios"`
}

// gridEntry is one scenario of scenarios.json: its shape and its answer (null until analyzed).
type gridEntry struct {
	Name string `json:"name"`
	// Dir is its results directory, relative to the grid's.
	Dir string `json:"dir"`
	// InputTokens and OutputTokens are the mean prompt and output tokens its workload asks
	// for; Shape is "IN/OUT" ("dataset" for a replayed dataset).
	InputTokens  float64 `json:"input_tokens"`
	OutputTokens float64 `json:"output_tokens"`
	Shape        string  `json:"shape"`
	// Status is finished, interrupted or not run.
	Status            string           `json:"status"`
	Knee              *analysis.Knee   `json:"knee"`
	SLOPoint          *gridSLO         `json:"slo_point"`
	MaxTPS            analysis.Float   `json:"max_tps"`
	MaxTPSConcurrency int              `json:"max_tps_concurrency,omitempty"`
	TTFTBlowup        *analysis.Blowup `json:"ttft_blowup"`
	Warnings          int              `json:"warnings"`
}

// gridSLO is a scenario's SLO point: the largest concurrency meeting every SLO, its bracket,
// its TPS and what binds (analysis.SLOResult).
type gridSLO struct {
	MaxConcurrency analysis.Float   `json:"max_concurrency"`
	Bracket        []analysis.Float `json:"bracket,omitempty"`
	TPS            analysis.Float   `json:"tps"`
	Limit          string           `json:"limit,omitempty"`
	// AtLeast: every valid level met the SLOs, so the SLO point is at least MaxConcurrency
	// (no limit binds within the levels).
	AtLeast bool `json:"at_least,omitempty"`
}

// Grid statuses of a scenario.
const (
	gridFinished    = "finished"
	gridInterrupted = "interrupted"
	gridNotRun      = "not run"
)

// isGridDir reports whether p is a scenario grid's results directory: it has scenarios.json
// and no levels.json.
func isGridDir(p string) bool {
	if _, err := os.Stat(filepath.Join(p, scenariosFile)); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(p, rundir.LevelsFile))
	return errors.Is(err, fs.ErrNotExist)
}

// runGrid runs a new scenario grid: its directory (new or empty) gets config.yaml and
// scenarios.json, then each scenario's sweep runs into DIR/<name>/ in turn, and the combined
// files are written after the last, or after the one that stopped the grid (an interrupt:
// exit 130, continue with --resume DIR).
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
// one is resumed (its own --resume), the rest run; then the combined files are rewritten.
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
	fmt.Fprintf(e.stderr, "kneecap: resuming scenario grid %s (%s)\n", dir, scenarioNames(cfg))
	return runScenarios(ctx, e, fl, dir, cfg)
}

// runScenarios runs every scenario of cfg not yet finished in dir, in order, then writes the
// grid's files (also when a scenario stopped the grid) and prints its table of knees.
func runScenarios(ctx context.Context, e *env, fl *sweepFlags, dir string, cfg config.Config) error {
	var runErr error
	for i, sc := range cfg.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		status := scenarioStatus(sub)
		if status == gridFinished {
			fmt.Fprintf(e.stderr, "kneecap: scenario %s (%d of %d) finished before: skipped\n", sc.Name, i+1, len(cfg.Scenarios))
			continue
		}
		fmt.Fprintf(e.stderr, "kneecap: scenario %s (%d of %d): %s\n", sc.Name, i+1, len(cfg.Scenarios), shapeOf(cfg.ScenarioConfig(i)))
		var s *sweepPrep
		var err error
		if status == gridInterrupted {
			flc := *fl
			flc.resume = sub
			s, err = prepareSweep(e, &flc)
		} else {
			s = &sweepPrep{cfg: cfg.ScenarioConfig(i)}
			s.cfg.Output.Dir = sub
			err = s.ready(e)
		}
		if err == nil {
			err = runSweep(ctx, e, fl, s)
		}
		if err != nil {
			runErr = fmt.Errorf("scenario %s: %w", sc.Name, err)
			ee := (*exitError)(nil)
			switch {
			case errors.As(err, &ee) && ee.err == nil:
				runErr = err // its problems are printed already
			case exitCode(err) == exitInterrupted:
				runErr = withCode(exitInterrupted, fmt.Errorf("sweep interrupted in scenario %s: results written to %s (continue the grid with --resume %s)", sc.Name, sub, dir))
			}
			break
		}
		if e.interrupt.Err() != nil || ctx.Err() != nil { // between two scenarios
			runErr = withCode(exitInterrupted, fmt.Errorf("sweep interrupted after scenario %s: results written to %s (continue with --resume %s)", sc.Name, dir, dir))
			break
		}
	}
	if err := writeGrid(e, dir, cfg); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// checkResumeFlags refuses the flags --resume does not take (only --url may change).
func checkResumeFlags(fl *sweepFlags) error {
	for _, name := range append(append([]string{"c", "o", "model", "api", "levels", "warmup", "duration", "max-duration",
		"min-requests", "input-tokens", "output-tokens", "name", "shard", "start-at", "refine"}, rateFlagNames...), traceFlagNames...) {
		if fl.set[name] {
			return cmdUsageError("sweep", "sweep: --resume takes the configuration from %s; %s cannot change it", fl.resume, dashes(name))
		}
	}
	return nil
}

// scenarioStatus says whether the scenario directory sub holds a finished run, an
// interrupted (or killed) one, or none.
func scenarioStatus(sub string) string {
	head, err := rundir.ReadMeta(sub)
	switch {
	case err != nil:
		return gridNotRun
	case head.StopReason == "" || head.StopReason == sweep.StopInterrupted:
		return gridInterrupted
	}
	return gridFinished
}

// scenarioNames lists the grid's scenario names, comma-separated.
func scenarioNames(cfg config.Config) string {
	var names []string
	for _, sc := range cfg.Scenarios {
		names = append(names, sc.Name)
	}
	return strings.Join(names, ", ")
}

// shapeOf is a workload's shape, "512/128" (mean prompt / output tokens), "dataset" for a
// replayed dataset.
func shapeOf(c config.Config) string {
	if c.Workload.Dataset != "" {
		return "dataset"
	}
	return fmt.Sprintf("%g/%g", c.Workload.InputTokens.Mean, c.Workload.OutputTokens.Mean)
}

// writeGridConfig writes the grid's config.yaml (redacted), which --resume DIR reads.
func writeGridConfig(dir string, cfg config.Config) error {
	var buf bytes.Buffer
	buf.WriteString("# kneecap scenario grid configuration (secrets redacted); `kneecap sweep --resume` reads it.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(cfg.Redacted()); err != nil {
		return fmt.Errorf("sweep: encode config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("sweep: encode config: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.ConfigFile), buf.Bytes()); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// gridScenarios reads each scenario's status and analysis (nil when it has none).
func gridScenarios(dir string, cfg config.Config) []report.GridScenario {
	out := make([]report.GridScenario, len(cfg.Scenarios))
	for i, sc := range cfg.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		out[i] = report.GridScenario{Name: sc.Name, Shape: shapeOf(cfg.ScenarioConfig(i)), Status: scenarioStatus(sub)}
		if _, err := os.Stat(filepath.Join(sub, rundir.AnalysisFile)); err == nil {
			if res, _, err := readRun(sub); err == nil {
				out[i].Result = res
			}
		}
	}
	return out
}

// writeGridDoc writes scenarios.json of the scenarios scs (nil: every scenario not run).
func writeGridDoc(dir string, cfg config.Config, scs []report.GridScenario) error {
	doc := gridDoc{Schema: gridSchema, Name: cfg.Name, Scenarios: []gridEntry{}}
	for i, sc := range cfg.Scenarios {
		c := cfg.ScenarioConfig(i)
		en := gridEntry{Name: sc.Name, Dir: sc.Name, InputTokens: c.Workload.InputTokens.Mean, OutputTokens: c.Workload.OutputTokens.Mean,
			Shape: shapeOf(c), Status: gridNotRun, MaxTPS: analysis.NaN()}
		if scs != nil {
			en.Status = scs[i].Status
			if r := scs[i].Result; r != nil {
				en.Knee, en.TTFTBlowup, en.Warnings = r.Knee, r.TTFTBlowup, len(r.Warnings)
				en.MaxTPS, en.MaxTPSConcurrency = r.Throughput.MaxTPS, r.Throughput.MaxTPSConcurrency
				en.SLOPoint = &gridSLO{MaxConcurrency: r.SLO.MaxConcurrency, Bracket: r.SLO.Bracket, TPS: r.SLO.TPS, Limit: r.SLO.Limit,
					AtLeast: r.SLO.MaxConcurrency.OK() && r.SLO.Limit == ""}
			}
		}
		doc.Scenarios = append(doc.Scenarios, en)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("grid: encode %s: %w", scenariosFile, err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, scenariosFile), append(b, '\n')); err != nil {
		return fmt.Errorf("grid: %w", err)
	}
	return nil
}

// writeGrid writes the grid's scenarios.json, pareto.png / pareto.svg, report.md and
// report.html from its scenarios' analyses, and prints its table of knees.
func writeGrid(e *env, dir string, cfg config.Config) error {
	scs := gridScenarios(dir, cfg)
	if err := writeGridDoc(dir, cfg, scs); err != nil {
		return err
	}
	var runs []*analysis.Result
	var labels []string
	for _, s := range scs {
		if s.Result != nil && s.Result.Mode != analysis.ModeRate {
			runs, labels = append(runs, s.Result), append(labels, s.Name)
		}
	}
	files, err := plots.RenderPareto(runs, labels, cfg.Plan.GPUsPerReplica)
	if err != nil {
		return fmt.Errorf("grid: %w", err)
	}
	if err := saveCharts(dir, files); err != nil {
		return fmt.Errorf("grid: %w", err)
	}
	svgs := map[string][]byte{}
	for _, f := range files {
		if f.Format == "svg" {
			svgs[f.Name] = f.Data
		}
	}
	title := strings.TrimSpace("kneecap scenario grid " + cfg.Name)
	var md, page bytes.Buffer
	if err := report.GridMarkdown(&md, title, scs, []string{plots.ParetoName + ".png"}); err != nil {
		return err
	}
	if err := report.GridHTML(&page, title, scs, svgs); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"report.md": md.Bytes(), "report.html": page.Bytes()} {
		if err := rundir.WriteFileAtomic(filepath.Join(dir, name), b); err != nil {
			return fmt.Errorf("grid: %w", err)
		}
	}
	fmt.Fprintln(e.stdout)
	if err := report.GridConsole(e.stdout, title+": "+dir, scs); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\nreport: %s\n", filepath.Join(dir, "report.html"))
	return nil
}

// quiet returns e with stdout discarded (a scenario's console summary inside a grid command).
func (e *env) quiet() *env {
	c := *e
	c.stdout = io.Discard
	return &c
}
