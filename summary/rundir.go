package summary

// This file is the one place summary reads a results directory (with the sweep package's
// reader) and turns a run's configuration into analysis options.

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/sweep"
)

// isResultsDir reports whether dir is a results directory: it has levels.json.
func isResultsDir(dir string) bool { return exists(filepath.Join(dir, sweep.LevelsFile)) }

// loadResultsDir reads the results directory dir: its records, or without records.jsonl its
// summary.csv (refused when inPlace, see Load).
func loadResultsDir(dir string, inPlace bool) (*Input, error) {
	if !exists(filepath.Join(dir, sweep.RecordsFile)) {
		return loadResultsSummary(dir, inPlace)
	}
	run, err := sweep.ReadResults(dir)
	if err == nil {
		err = sweep.CheckNotShard(run)
	}
	if err != nil {
		return nil, err
	}
	return FromResults(run), nil
}

// loadResultsSummary reads a results directory that has config.yaml and levels.json but no
// records.jsonl from its summary.csv, with the run's meta and its config's analysis options.
// A run that measured no level is read as any results directory (in place allowed).
func loadResultsSummary(dir string, inPlace bool) (*Input, error) {
	head, err := sweep.ReadResultsMeta(dir)
	if err == nil {
		err = sweep.CheckNotShard(head)
	}
	if err != nil {
		return nil, err
	}
	if len(head.Levels) == 0 {
		// Nothing was measured: ReadResults reads such a directory without records.jsonl.
		run, err := sweep.ReadResults(dir)
		if err != nil {
			return nil, err
		}
		return FromResults(run), nil
	}
	csvPath := filepath.Join(dir, CSVFile)
	if !exists(csvPath) {
		return nil, fmt.Errorf("%s has no %s and no %s: nothing to analyze", dir, sweep.RecordsFile, CSVFile)
	}
	if inPlace {
		return nil, fmt.Errorf("%s has no %s: %w", dir, sweep.RecordsFile, ErrInPlace)
	}
	levels, err := readCSVFile(csvPath)
	if err != nil {
		return nil, err
	}
	return &Input{Kind: ResultsSummary, Path: dir, Meta: runMeta(head), Options: ConfigOptions(head.Config), levels: levels}, nil
}

// FromResults returns the input of a results directory already read with sweep.ReadResults
// (kneecap sweep analyzes its own directory at its end): Kind ResultsDir, Levels summarizes
// its records per level, Meta describes the run and Options are its config's.
func FromResults(res *sweep.Results) *Input {
	return &Input{
		Kind:    ResultsDir,
		Path:    res.Dir,
		Meta:    runMeta(res),
		Options: ConfigOptions(res.Config),
		summarize: func(opts analysis.Options) []analysis.Level {
			return analysis.Summarize(sweep.GroupRecords(res.Levels, res.Records), opts)
		},
	}
}

// runMeta describes a results directory's run for the reports.
func runMeta(res *sweep.Results) analysis.Meta {
	meta := analysis.Meta{
		Name:           res.Config.Name,
		Model:          res.Config.Target.Model,
		Endpoint:       res.Endpoint,
		Source:         res.Dir,
		StopReason:     res.StopReason,
		LoadGenerators: res.Shards,
		Server:         res.Server,
		Kneecap:        res.Kneecap,
	}
	if !res.Start.IsZero() {
		meta.Date = res.Start.UTC().Format(time.RFC3339)
	}
	return meta
}

// ConfigOptions returns the analysis options of a run's configuration: its SLO (the
// article's defaults, TTFT p95 ≤ 2 s and TPOT p95 ≤ 50 ms, when the config sets none), knee
// gain, max error rate and capacity plan.
func ConfigOptions(cfg sweep.Config) analysis.Options {
	o := analysis.DefaultOptions()
	if cfg.Analysis.KneeGain > 0 {
		o.KneeGain = cfg.Analysis.KneeGain
	}
	if s := cfg.SLO; s.TTFTP95 > 0 || s.TPOTP95 > 0 || s.E2EP95 > 0 {
		o.SLO = analysis.SLO{TTFTP95: s.TTFTP95, TPOTP95: s.TPOTP95, E2EP95: s.E2EP95}
	}
	if cfg.Sweep.Stop.MaxErrorRate > 0 {
		o.MaxErrorRate = cfg.Sweep.Stop.MaxErrorRate
	}
	o.Plan = analysis.Plan{
		ConcurrentUsers:    cfg.Plan.ConcurrentUsers,
		QPS:                cfg.Plan.QPS,
		OutputTPS:          cfg.Plan.OutputTPS,
		ReplicaCostPerHour: cfg.Plan.ReplicaCostPerHour,
		GPUsPerReplica:     cfg.Plan.GPUsPerReplica,
	}
	return o
}
