// Package grid runs a scenario grid (DESIGN §5.3, §9.4): one sweep per scenario of a
// configuration with scenarios:, each into DIR/<name>/, with the grid's state in
// DIR/scenarios.json (Doc). It holds the scenario state machine (which scenarios run, resume,
// start again or are skipped, and which outcome stops the grid), the comparison of a
// scenario's recorded configuration with the grid's (what it measures may not change on
// --resume), the grid's combined files (report, Pareto chart) and the scenario-by-scenario
// comparison of two grids' bookkeeping. Each scenario's sweep is made ready by launch and run
// by the command.
package grid

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// schema is the schema tag of scenarios.json.
const schema = "kneecap.grid/v1"

// Doc is scenarios.json (rundir.ScenariosFile), which marks a grid's directory and lists its
// scenarios and their answers.
type Doc struct {
	Schema    string  `json:"schema"`
	Name      string  `json:"name,omitempty"`
	Scenarios []Entry `json:"scenarios"`
}

// Entry is one scenario of scenarios.json: its shape and its answer (null until analyzed).
type Entry struct {
	Name string `json:"name"`
	// Dir is its results directory, relative to the grid's.
	Dir string `json:"dir"`
	// InputTokens and OutputTokens are the nominal prompt and output tokens its workload asks
	// for (0: unknown, as a dataset's prompts; workload.WorkloadConfig.NominalLengths); Shape is
	// "IN/OUT" ("dataset", "dataset/OUT", "sessions/OUT"; shape).
	InputTokens  float64 `json:"input_tokens"`
	OutputTokens float64 `json:"output_tokens"`
	Shape        string  `json:"shape"`
	// Status is finished, interrupted, not run, unreachable (the server stopped answering)
	// or failed; Reason says what went wrong (the last two).
	Status            string           `json:"status"`
	Reason            string           `json:"reason,omitempty"`
	Knee              *analysis.Knee   `json:"knee"`
	SLOPoint          *SLO             `json:"slo_point"`
	MaxTPS            analysis.Float   `json:"max_tps"`
	MaxTPSConcurrency int              `json:"max_tps_concurrency,omitempty"`
	TTFTBlowup        *analysis.Blowup `json:"ttft_blowup"`
	Warnings          int              `json:"warnings"`
}

// SLO is a scenario's SLO point: the largest concurrency meeting every SLO, its bracket, its
// TPS and what binds (analysis.SLOResult).
type SLO struct {
	MaxConcurrency analysis.Float   `json:"max_concurrency"`
	Bracket        []analysis.Float `json:"bracket,omitempty"`
	TPS            analysis.Float   `json:"tps"`
	Limit          string           `json:"limit,omitempty"`
	// AtLeast: every valid level met the SLOs, so the SLO point is at least MaxConcurrency
	// (no limit binds within the levels).
	AtLeast bool `json:"at_least,omitempty"`
}

// Statuses of a scenario (scenarios.json's status; reason says what went wrong).
const (
	Finished    = "finished"
	Interrupted = "interrupted"
	NotRun      = "not run"
	// Unreachable: its sweep stopped because the server stopped answering (server
	// unreachable, no answer); --resume runs it again.
	Unreachable = "unreachable"
	// Failed: its sweep failed (refused by the target, or an error); --resume runs it again.
	Failed = "failed"
)

// Fault is what went wrong with a scenario in this command: its status (failed or
// unreachable) and why.
type Fault struct{ status, reason string }

// IsDir reports whether p is a scenario grid's results directory: it has scenarios.json and
// no levels.json.
func IsDir(p string) bool {
	if _, err := os.Stat(filepath.Join(p, rundir.ScenariosFile)); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(p, rundir.LevelsFile))
	return errors.Is(err, fs.ErrNotExist)
}

// Status says whether the scenario directory sub holds a finished run, an interrupted (or
// killed) one, one the server stopped (unreachable) or one that failed (a write error), or
// none; reason is the stop reason of the last two.
func Status(sub string) (status, reason string) {
	head, err := rundir.ReadMeta(sub)
	switch {
	case err != nil:
		return NotRun, ""
	case head.StopReason == "" || head.StopReason == sweep.StopInterrupted:
		return Interrupted, ""
	case strings.HasPrefix(head.StopReason, sweep.StopUnreachable), strings.HasPrefix(head.StopReason, sweep.StopSilent):
		return Unreachable, head.StopReason
	case strings.HasPrefix(head.StopReason, "error: "):
		return Failed, head.StopReason
	}
	return Finished, ""
}

// Names lists the grid's scenario names, comma-separated.
func Names(cfg config.Config) string {
	var names []string
	for _, sc := range cfg.Scenarios {
		names = append(names, sc.Name)
	}
	return strings.Join(names, ", ")
}

// shape is a workload's shape, "512/128": the nominal prompt / output tokens it asks for
// (workload.WorkloadConfig.NominalLengths; "?" when unknown), "dataset" (or "dataset/OUT" with
// fixed_output) for a replayed dataset, "sessions/OUT" for synthetic sessions.
func shape(c config.Config) string {
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

// writeConfig writes the grid's config.yaml (redacted), which --resume DIR reads.
func writeConfig(dir string, cfg config.Config) error {
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

// scenario is one scenario's state in the grid's directory.
type scenario struct {
	report.GridScenario
	// cfg is its configuration: DIR/NAME/config.yaml once it has run, else the grid's
	// (config.Config.ScenarioConfig).
	cfg config.Config
	// status is one of the statuses, reason what went wrong (failed, unreachable).
	status, reason string
}

// scenarios reads each scenario's status, configuration and analysis (nil when it has none);
// faults are what went wrong with scenarios, by name (a directory stopped by the server stays
// unreachable).
func scenarios(dir string, cfg config.Config, faults map[string]Fault) []scenario {
	out := make([]scenario, len(cfg.Scenarios))
	for i, sc := range cfg.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		g := scenario{cfg: cfg.ScenarioConfig(i)}
		g.status, g.reason = Status(sub)
		if f, ok := faults[sc.Name]; ok && g.status != Finished {
			if g.status != Unreachable {
				g.status = f.status
			}
			g.reason = f.reason
		}
		if head, err := rundir.ReadMeta(sub); err == nil {
			g.cfg = head.Config
		}
		g.Name, g.Shape, g.Status = sc.Name, shape(g.cfg), g.status
		if g.reason != "" {
			g.Status += ": " + g.reason
		}
		if _, err := os.Stat(filepath.Join(sub, rundir.AnalysisFile)); err == nil {
			if res, _, err := rundir.ReadAnalysis(sub); err == nil {
				g.Result = res
			}
		}
		out[i] = g
	}
	return out
}

// PriorReasons are the reasons scenarios.json in dir gives for its failed and unreachable
// scenarios (analyze keeps them).
func PriorReasons(dir string) map[string]Fault {
	out := map[string]Fault{}
	doc, err := ReadDoc(dir)
	if err != nil {
		return out
	}
	for _, s := range doc.Scenarios {
		if s.Reason != "" && (s.Status == Failed || s.Status == Unreachable) {
			out[s.Name] = Fault{s.Status, s.Reason}
		}
	}
	return out
}

// ReadDoc reads a grid directory's scenarios.json; an error is a usage error of compare.
func ReadDoc(dir string) (Doc, error) {
	var doc Doc
	b, err := os.ReadFile(filepath.Join(dir, rundir.ScenariosFile))
	if err != nil {
		return doc, exit.Usagef("compare: %w", err)
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Schema != schema {
		return doc, exit.Usagef("compare: %s: not a scenarios.json of kneecap (schema %q, want %q)", filepath.Join(dir, rundir.ScenariosFile), doc.Schema, schema)
	}
	for i, e := range doc.Scenarios {
		err := config.CheckName(e.Name)
		if err == nil && e.Dir != "" {
			err = config.CheckName(e.Dir)
		}
		if err != nil {
			return doc, exit.Usagef("compare: %s: scenario %d: %w", filepath.Join(dir, rundir.ScenariosFile), i+1, err)
		}
	}
	return doc, nil
}

// CheckNames checks the scenario names of a grid's config.yaml in dir (config.CheckName)
// before a reader of the grid joins them to a path: an edited or foreign results directory
// must not make kneecap write outside it. The error is a usage error naming the file and
// the scenario.
func CheckNames(dir string, cfg config.Config) error {
	for i, sc := range cfg.Scenarios {
		if err := config.CheckName(sc.Name); err != nil {
			return exit.Usagef("%s: scenario %d: %w", filepath.Join(dir, rundir.ConfigFile), i+1, err)
		}
	}
	return nil
}

// writeDoc writes scenarios.json of the scenarios scs (nil: every scenario not run).
func writeDoc(dir string, cfg config.Config, scs []scenario) error {
	doc := Doc{Schema: schema, Name: cfg.Name, Scenarios: []Entry{}}
	for i, sc := range cfg.Scenarios {
		c := cfg.ScenarioConfig(i)
		status, reason := NotRun, ""
		var r *analysis.Result
		if scs != nil {
			c, status, reason, r = scs[i].cfg, scs[i].status, scs[i].reason, scs[i].Result
		}
		in, out := c.Workload.NominalLengths()
		en := Entry{Name: sc.Name, Dir: sc.Name, InputTokens: in, OutputTokens: out,
			Shape: shape(c), Status: status, Reason: reason, MaxTPS: analysis.NaN()}
		if r != nil {
			en.Knee, en.TTFTBlowup, en.Warnings = r.Knee, r.TTFTBlowup, len(r.Warnings)
			en.MaxTPS, en.MaxTPSConcurrency = r.Throughput.MaxTPS, r.Throughput.MaxTPSConcurrency
			en.SLOPoint = &SLO{MaxConcurrency: r.SLO.MaxConcurrency, Bracket: r.SLO.Bracket, TPS: r.SLO.TPS, Limit: r.SLO.Limit,
				AtLeast: r.SLO.MaxConcurrency.OK() && r.SLO.Limit == ""}
		}
		doc.Scenarios = append(doc.Scenarios, en)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("grid: encode %s: %w", rundir.ScenariosFile, err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.ScenariosFile), append(b, '\n')); err != nil {
		return fmt.Errorf("grid: %w", err)
	}
	return nil
}
