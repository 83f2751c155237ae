package summary

// This file is the one place summary reads a results directory (package rundir).

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
)

// isResultsDir reports whether dir is a results directory: it has levels.json.
func isResultsDir(dir string) bool { return exists(filepath.Join(dir, rundir.LevelsFile)) }

// loadResultsDir reads the results directory dir: its records (until ctx is done,
// rundir.ReadContext), or without them (no records.jsonl, or one holding no record of the
// levels listed) its summary.csv (refused when inPlace, see Load).
func loadResultsDir(ctx context.Context, dir string, inPlace bool) (*Input, error) {
	if !exists(filepath.Join(dir, rundir.RecordsFile)) {
		return loadResultsSummary(dir, inPlace, "has no "+rundir.RecordsFile)
	}
	run, err := rundir.ReadContext(ctx, dir)
	if err == nil {
		err = rundir.CheckNotShard(run)
	}
	if err != nil {
		return nil, err
	}
	if why := run.MissingRecords(); why != "" {
		return loadResultsSummary(dir, inPlace, why)
	}
	return FromResults(run), nil
}

// loadResultsSummary reads a results directory that has config.yaml and levels.json but not
// its records (why says how: "has no records.jsonl", "levels.json lists 3 levels, but
// records.jsonl is empty") from its summary.csv, with the run's meta and its config's
// analysis options. A run that measured no level is read as any results directory (in place
// allowed).
func loadResultsSummary(dir string, inPlace bool, why string) (*Input, error) {
	head, err := rundir.ReadMeta(dir)
	if err == nil {
		err = rundir.CheckNotShard(head)
	}
	if err != nil {
		return nil, err
	}
	if len(head.Levels) == 0 {
		// Nothing was measured: rundir.Read reads such a directory without records.jsonl.
		run, err := rundir.Read(dir)
		if err != nil {
			return nil, err
		}
		return FromResults(run), nil
	}
	sep := " "
	if !strings.HasPrefix(why, "has ") {
		sep = ": "
	}
	if inPlace {
		return nil, fmt.Errorf("%s%s%s: %w", dir, sep, why, ErrInPlace)
	}
	csvPath := filepath.Join(dir, CSVFile)
	if !exists(csvPath) {
		if why == "has no "+rundir.RecordsFile {
			return nil, fmt.Errorf("%s has no %s and no %s: nothing to analyze", dir, rundir.RecordsFile, CSVFile)
		}
		return nil, fmt.Errorf("%s%s%s, and it has no %s: nothing to analyze", dir, sep, why, CSVFile)
	}
	levels, err := readCSVFile(csvPath)
	if err != nil {
		return nil, err
	}
	return &Input{Kind: ResultsSummary, Path: dir, Meta: runMeta(head), Options: head.Config.AnalysisOptions(), levels: levels,
		Why: dir + sep + why}, nil
}

// FromResults returns the input of a results directory already read with rundir.Read
// (kneecap sweep analyzes its own directory at its end): Kind resultsDir, Levels summarizes
// its records per level, Meta describes the run and Options are its config's. The records
// are first held to the usage rules of the live sweep (analysis.RecheckUsage, DESIGN §7),
// those that fail them changed in place and warned of.
func FromResults(res *rundir.Run) *Input {
	var warnings []string
	if d := res.Dropped.String(); d != "" {
		warnings = append(warnings, fmt.Sprintf("%s: %s", filepath.Join(res.Dir, rundir.RecordsFile), d))
	}
	if w := analysis.RecheckUsage(res.Levels, tokensPerChunkBound(res)); w != "" {
		warnings = append(warnings, w)
	}
	if why := res.Config.UnforcedLengths(); why != "" {
		warnings = append(warnings, why)
	}
	return &Input{
		Warnings: warnings,
		Kind:     resultsDir,
		Path:     res.Dir,
		Meta:     runMeta(res),
		Options:  res.Config.AnalysisOptions(),
		summarize: func(opts analysis.Options) []analysis.Level {
			return analysis.Summarize(res.Levels, opts)
		},
	}
}

// tokensPerChunkBound is the most tokens one content chunk of res may carry, as the sweep
// bounded it (record.ChunkBound, DESIGN §7), for the levels whose levels.json entry does not
// say: from the tokens per chunk its config declares, else its server's info unless sharded.
func tokensPerChunkBound(res *rundir.Run) int {
	sharded := res.Shards > 1 || res.Config.Shard.Sharded()
	return record.ChunkBound(res.Config.Target.TokensPerChunk, res.Server, sharded)
}

// runMeta describes a results directory's run for the reports.
func runMeta(res *rundir.Run) analysis.Meta {
	meta := analysis.Meta{
		Name:           res.Config.Name,
		Model:          res.Config.Target.Model,
		Endpoint:       res.Endpoint,
		Source:         res.Dir,
		StopReason:     res.StopReason,
		LoadGenerators: res.Shards,
		Clocks:         record.ClockSummary(res.Runs()),
		Server:         res.Server,
		Kneecap:        res.Kneecap,
		PromptSizing:   res.PromptSizing,
		GPUIdle:        res.GPUIdle,
		Trace:          res.Trace,
	}
	if api := res.Config.Target.API; api != record.APIChat && api != record.APICompletions {
		meta.API = api
	}
	if !res.Start.IsZero() {
		meta.Date = res.Start.UTC().Format(time.RFC3339)
	}
	meta.GPUs, meta.GPUMatch = gpusCounted(res)
	return meta
}

// gpusCounted returns the GPUs res's telemetry counted — those of its first level with GPU
// figures, else of its idle reading; none without telemetry — and the gpu_metrics.match
// filter that selected them, "label=regexp" pairs in label order.
func gpusCounted(res *rundir.Run) ([]record.GPU, string) {
	var gpus []record.GPU
	for _, l := range res.Levels {
		if g := l.Run.GPU; g != nil && len(g.GPUs) > 0 {
			gpus = gpuNames(g)
			break
		}
	}
	if gpus == nil && res.GPUIdle != nil {
		gpus = gpuNames(res.GPUIdle)
	}
	if gpus == nil {
		return nil, ""
	}
	var match []string
	for _, k := range slices.Sorted(maps.Keys(res.Config.GPUMetrics.Match)) {
		match = append(match, k+"="+res.Config.GPUMetrics.Match[k])
	}
	return gpus, strings.Join(match, ", ")
}

// gpuNames returns the GPUs of st.
func gpuNames(st *record.GPUStats) []record.GPU {
	out := make([]record.GPU, len(st.GPUs))
	for i, g := range st.GPUs {
		out[i] = g.GPU
	}
	return out
}
