package grid

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
)

// Write writes the grid's scenarios.json, pareto.png / pareto.svg, report.md and report.html
// into dir from its scenarios' analyses (faults: what went wrong with scenarios, by name), and
// returns the grid's title and its scenarios for the console's table of knees.
func Write(dir string, cfg config.Config, faults map[string]Fault) (string, []report.GridScenario, error) {
	states := scenarios(dir, cfg, faults)
	if err := writeDoc(dir, cfg, states); err != nil {
		return "", nil, err
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
		return "", nil, fmt.Errorf("grid: %w", err)
	}
	for _, f := range files {
		if f.Narrow {
			continue // shown in report.html on a phone; no file of its own
		}
		if err := rundir.WriteFileAtomic(filepath.Join(dir, f.FileName()), f.Data); err != nil {
			return "", nil, fmt.Errorf("grid: %w", err)
		}
	}
	svgs := plots.SVGs(files, report.NarrowSuffix)
	title := strings.TrimSpace("kneecap scenario grid " + cfg.Name)
	var md, page bytes.Buffer
	if err := report.GridMarkdown(&md, title, scs, []string{plots.ParetoName + ".png"}); err != nil {
		return "", nil, err
	}
	if err := report.GridHTML(&page, title, scs, svgs); err != nil {
		return "", nil, err
	}
	for name, b := range map[string][]byte{rundir.ReportFile: md.Bytes(), rundir.ReportHTMLFile: page.Bytes()} {
		if err := rundir.WriteFileAtomic(filepath.Join(dir, name), b); err != nil {
			return "", nil, fmt.Errorf("grid: %w", err)
		}
	}
	return title, scs, nil
}
