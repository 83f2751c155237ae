package grid

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/rundir"
)

// Comparison is the bookkeeping of two grids compared scenario by scenario (DESIGN §5.8):
// the scenarios compared and those not, written with the gate as the combined compare.json.
type Comparison struct {
	Baseline  string  `json:"baseline"`
	Candidate string  `json:"candidate"`
	MaxDrop   float64 `json:"max_drop"`
	// Regressions counts the regressed figures of every scenario compared plus the baseline
	// scenarios missing (or not analyzed) in the candidate.
	Regressions int        `json:"regressions"`
	Scenarios   []Compared `json:"scenarios"`
	Missing     []Missing  `json:"missing"`
	Warnings    []string   `json:"warnings,omitempty"`
}

// Compared is one scenario compared: its regressed figures; Dir/compare.json has them.
type Compared struct {
	Name        string `json:"name"`
	Regressions int    `json:"regressions"`
	Dir         string `json:"dir"`
}

// Missing is a scenario not compared, and whether it fails the gate (a baseline's scenario
// the candidate lacks or has not analyzed).
type Missing struct {
	What      string `json:"what"`
	FailsGate bool   `json:"fails_gate"`
}

// NewComparison starts the comparison of the grids labelled baseline and candidate (maxDrop:
// the gate's, < 0 without one).
func NewComparison(baseline, candidate string, maxDrop float64) *Comparison {
	return &Comparison{Baseline: baseline, Candidate: candidate, MaxDrop: maxDrop, Scenarios: []Compared{}, Missing: []Missing{}}
}

// Miss records a scenario not compared (what says why).
func (c *Comparison) Miss(what string, failsGate bool) {
	c.Missing = append(c.Missing, Missing{What: what, FailsGate: failsGate})
}

// Add records scenario name compared in DIR/name, with its regressed figures.
func (c *Comparison) Add(name string, regressions int) {
	c.Scenarios = append(c.Scenarios, Compared{Name: name, Regressions: regressions, Dir: name})
}

// NotCompared is the console's line for m: "WHAT: not compared (fails the gate)".
func (m Missing) NotCompared() string { return m.What + ": not compared" + failsGate(m.FailsGate) }

func failsGate(b bool) string {
	if b {
		return " (fails the gate)"
	}
	return ""
}

// Write adds the scenarios not compared to out/compare.md and, with the gate, writes
// out/compare.json.
func (c *Comparison) Write(out string, gate bool) error {
	if err := appendMissing(filepath.Join(out, rundir.CompareOutput), c.Missing, c.Warnings); err != nil {
		return err
	}
	if !gate {
		return nil
	}
	for _, s := range c.Scenarios {
		c.Regressions += s.Regressions
	}
	for _, m := range c.Missing {
		if m.FailsGate {
			c.Regressions++
		}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(out, rundir.CompareJSONFile), append(b, '\n'))
}

// appendMissing adds sections naming the scenarios not compared and the warnings to
// compare.md.
func appendMissing(path string, missing []Missing, warnings []string) error {
	if len(missing) == 0 && len(warnings) == 0 {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sb strings.Builder
	sb.Write(b)
	if len(missing) > 0 {
		sb.WriteString("\n## Scenarios not compared\n\n")
	}
	for _, m := range missing {
		sb.WriteString("- " + m.What + failsGate(m.FailsGate) + "\n")
	}
	if len(warnings) > 0 {
		sb.WriteString("\n## Scenario warnings\n\n")
	}
	for _, w := range warnings {
		sb.WriteString("- " + w + "\n")
	}
	return rundir.WriteFileAtomic(path, []byte(sb.String()))
}
