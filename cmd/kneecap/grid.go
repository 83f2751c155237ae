package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/record"
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
	// InputTokens and OutputTokens are the nominal prompt and output tokens its workload asks
	// for (0: unknown, as a dataset's prompts; workload.WorkloadConfig.NominalLengths); Shape is
	// "IN/OUT" ("dataset", "dataset/OUT", "sessions/OUT"; shapeOf).
	InputTokens  float64 `json:"input_tokens"`
	OutputTokens float64 `json:"output_tokens"`
	Shape        string  `json:"shape"`
	// Status is finished, interrupted, not run, unreachable (the server stopped answering)
	// or failed; Reason says what went wrong (the last two).
	Status            string           `json:"status"`
	Reason            string           `json:"reason,omitempty"`
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

// Grid statuses of a scenario (scenarios.json's status; reason says what went wrong).
const (
	gridFinished    = "finished"
	gridInterrupted = "interrupted"
	gridNotRun      = "not run"
	// gridUnreachable: its sweep stopped because the server stopped answering (server
	// unreachable, no answer); --resume runs it again.
	gridUnreachable = "unreachable"
	// gridFailed: its sweep failed (refused by the target, or an error); --resume runs it again.
	gridFailed = "failed"
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

// scenarioStatus says whether the scenario directory sub holds a finished run, an
// interrupted (or killed) one, one the server stopped (unreachable) or one that failed (a
// write error), or none; reason is the stop reason of the last two.
func scenarioStatus(sub string) (status, reason string) {
	head, err := rundir.ReadMeta(sub)
	switch {
	case err != nil:
		return gridNotRun, ""
	case head.StopReason == "" || head.StopReason == sweep.StopInterrupted:
		return gridInterrupted, ""
	case strings.HasPrefix(head.StopReason, sweep.StopUnreachable), strings.HasPrefix(head.StopReason, sweep.StopSilent):
		return gridUnreachable, head.StopReason
	case strings.HasPrefix(head.StopReason, "error: "):
		return gridFailed, head.StopReason
	}
	return gridFinished, ""
}

// scenarioNames lists the grid's scenario names, comma-separated.
func scenarioNames(cfg config.Config) string {
	var names []string
	for _, sc := range cfg.Scenarios {
		names = append(names, sc.Name)
	}
	return strings.Join(names, ", ")
}

// shapeOf is a workload's shape, "512/128": the nominal prompt / output tokens it asks for
// (workload.WorkloadConfig.NominalLengths; "?" when unknown), "dataset" (or "dataset/OUT" with
// fixed_output) for a replayed dataset, "sessions/OUT" for synthetic sessions.
func shapeOf(c config.Config) string {
	in, out := c.Workload.NominalLengths()
	num := func(x float64) string {
		if x > 0 {
			return fmt.Sprintf("%g", x)
		}
		return "?"
	}
	switch {
	case c.Workload.Dataset != "" && out > 0:
		return "dataset/" + num(out)
	case c.Workload.Dataset != "":
		return "dataset"
	case c.Workload.Sessions != nil:
		return "sessions/" + num(out)
	}
	return num(in) + "/" + num(out)
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

// gridScenario is one scenario's state in the grid's directory.
type gridScenario struct {
	report.GridScenario
	// cfg is its configuration: DIR/NAME/config.yaml once it has run, else the grid's
	// (config.Config.ScenarioConfig).
	cfg config.Config
	// status is one of the grid statuses, reason what went wrong (failed, unreachable).
	status, reason string
}

// gridScenarios reads each scenario's status, configuration and analysis (nil when it has
// none); faults are what went wrong with scenarios, by name (a directory stopped by the
// server stays unreachable).
func gridScenarios(dir string, cfg config.Config, faults map[string]scenarioFault) []gridScenario {
	out := make([]gridScenario, len(cfg.Scenarios))
	for i, sc := range cfg.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		g := gridScenario{cfg: cfg.ScenarioConfig(i)}
		g.status, g.reason = scenarioStatus(sub)
		if f, ok := faults[sc.Name]; ok && g.status != gridFinished {
			if g.status != gridUnreachable {
				g.status = f.status
			}
			g.reason = f.reason
		}
		if head, err := rundir.ReadMeta(sub); err == nil {
			g.cfg = head.Config
		}
		g.Name, g.Shape, g.Status = sc.Name, shapeOf(g.cfg), g.status
		if g.reason != "" {
			g.Status += ": " + g.reason
		}
		if _, err := os.Stat(filepath.Join(sub, rundir.AnalysisFile)); err == nil {
			if res, _, err := readRun(sub); err == nil {
				g.Result = res
			}
		}
		out[i] = g
	}
	return out
}

// priorReasons are the reasons scenarios.json in dir gives for its failed and unreachable
// scenarios (analyze keeps them).
func priorReasons(dir string) map[string]scenarioFault {
	out := map[string]scenarioFault{}
	doc, err := readGridDoc(dir)
	if err != nil {
		return out
	}
	for _, s := range doc.Scenarios {
		if s.Reason != "" && (s.Status == gridFailed || s.Status == gridUnreachable) {
			out[s.Name] = scenarioFault{s.Status, s.Reason}
		}
	}
	return out
}

// writeGridDoc writes scenarios.json of the scenarios scs (nil: every scenario not run).
func writeGridDoc(dir string, cfg config.Config, scs []gridScenario) error {
	doc := gridDoc{Schema: gridSchema, Name: cfg.Name, Scenarios: []gridEntry{}}
	for i, sc := range cfg.Scenarios {
		c := cfg.ScenarioConfig(i)
		status, reason := gridNotRun, ""
		var r *analysis.Result
		if scs != nil {
			c, status, reason, r = scs[i].cfg, scs[i].status, scs[i].reason, scs[i].Result
		}
		in, out := c.Workload.NominalLengths()
		en := gridEntry{Name: sc.Name, Dir: sc.Name, InputTokens: in, OutputTokens: out,
			Shape: shapeOf(c), Status: status, Reason: reason, MaxTPS: analysis.NaN()}
		if r != nil {
			en.Knee, en.TTFTBlowup, en.Warnings = r.Knee, r.TTFTBlowup, len(r.Warnings)
			en.MaxTPS, en.MaxTPSConcurrency = r.Throughput.MaxTPS, r.Throughput.MaxTPSConcurrency
			en.SLOPoint = &gridSLO{MaxConcurrency: r.SLO.MaxConcurrency, Bracket: r.SLO.Bracket, TPS: r.SLO.TPS, Limit: r.SLO.Limit,
				AtLeast: r.SLO.MaxConcurrency.OK() && r.SLO.Limit == ""}
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
func writeGrid(e *env, dir string, cfg config.Config, faults map[string]scenarioFault) error {
	states := gridScenarios(dir, cfg, faults)
	if err := writeGridDoc(dir, cfg, states); err != nil {
		return err
	}
	scs := make([]report.GridScenario, len(states))
	var runs []*analysis.Result
	var labels []string
	for i, s := range states {
		scs[i] = s.GridScenario
		if s.Result != nil && s.Result.Mode != record.ModeRate {
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
