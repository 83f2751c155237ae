package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/sweep"
)

const analyzeUsage = "PATH [-o DIR] [--slo-ttft-p95 D] [--slo-tpot-p95 D] [--slo-e2e-p95 D] [--knee-gain F]\n\n" +
	"PATH is a results directory (with levels.json), a level-summary CSV, or a directory of\n" +
	"vLLM `bench serve` result JSON files. Writes DIR/analysis.json, DIR/summary.csv, the charts\n" +
	"and report.md / report.html. DIR defaults to PATH for a results directory."

// cmdAnalyze implements `kneecap analyze`: it reproduces every number of a run offline from
// its files (or analyzes a level-summary CSV or vLLM bench results) and writes analysis.json,
// summary.csv and the reports. A missing PATH or a malformed input file is a usage error
// (exit 2) naming the file, and for a CSV the line and the column.
func cmdAnalyze(ctx context.Context, e *env, args []string) error {
	fl := newFlagSet(e, "analyze", analyzeUsage)
	outDir := fl.String("o", "", "output `DIR` (default: PATH for a results directory; required otherwise)")
	ttft := fl.Duration("slo-ttft-p95", 0, "TTFT p95 SLO (overrides the run's config; 0 = not used)")
	tpot := fl.Duration("slo-tpot-p95", 0, "TPOT p95 SLO (overrides the run's config; 0 = not used)")
	e2e := fl.Duration("slo-e2e-p95", 0, "E2E p95 SLO (overrides the run's config; 0 = not used)")
	gain := fl.Float64("knee-gain", 0, "throughput gain per doubling below which the knee is reached (default 0.10 or the run's config)")
	boot := fl.Int("bootstrap", analysis.DefaultOptions().Bootstrap, "bootstrap resamples for the knee interval (0 = none)")
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fl.Usage()
		return usageError("analyze: want one PATH, got %d", len(pos))
	}
	if *gain < 0 || *gain >= 1 {
		return usageError("analyze: --knee-gain %g: want a fraction in (0, 1)", *gain)
	}
	if *ttft < 0 || *tpot < 0 || *e2e < 0 || *boot < 0 {
		return usageError("analyze: SLOs and --bootstrap must not be negative")
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override := func(o analysis.Options) analysis.Options {
		if set["slo-ttft-p95"] {
			o.SLO.TTFTP95 = *ttft
		}
		if set["slo-tpot-p95"] {
			o.SLO.TPOTP95 = *tpot
		}
		if set["slo-e2e-p95"] {
			o.SLO.E2EP95 = *e2e
		}
		if set["knee-gain"] && *gain > 0 {
			o.KneeGain = *gain
		}
		o.Bootstrap = *boot
		return o
	}

	path := pos[0]
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return usageError("analyze: %s: no such file or directory", path)
		}
		return usageError("analyze: %w", err)
	}
	var res *analysis.Result
	switch {
	case st.IsDir() && exists(filepath.Join(path, "levels.json")):
		run, err := sweep.ReadResults(path)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("analyze: %w", err))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		res = analyzeRun(run, override(optionsFromConfig(run.Config)))
		if *outDir == "" {
			*outDir = path
		}
	case st.IsDir():
		levels, meta, err := report.ReadVLLMBench(path)
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("analyze: %s is neither a results directory (no levels.json) nor vLLM bench results: %w", path, err))
		}
		r := analysis.Analyze(levels, meta, override(analysis.DefaultOptions()))
		res = &r
	default:
		f, err := os.Open(path)
		if err != nil {
			return usageError("analyze: %w", err)
		}
		levels, err := report.ReadCSV(f, path)
		f.Close()
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("analyze: %w", err))
		}
		r := analysis.Analyze(levels, analysis.Meta{Source: path, Name: trimExt(filepath.Base(path))}, override(analysis.DefaultOptions()))
		res = &r
	}
	if *outDir == "" {
		return usageError("analyze: -o DIR is required when PATH is not a results directory")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	if err := writeAnalysis(*outDir, res); err != nil {
		return err
	}
	return writeReports(e, res, *outDir)
}

// writeAnalysis writes dir/analysis.json (indented) and dir/summary.csv, each atomically.
func writeAnalysis(dir string, res *analysis.Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("analyze: encode analysis.json: %w", err)
	}
	if err := sweep.WriteFileAtomic(filepath.Join(dir, "analysis.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	var csv bytes.Buffer
	if err := report.WriteCSV(&csv, res.Levels); err != nil {
		return fmt.Errorf("analyze: summary.csv: %w", err)
	}
	if err := sweep.WriteFileAtomic(filepath.Join(dir, "summary.csv"), csv.Bytes()); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// analyzeRun summarizes a results directory's records per level and analyzes them: the
// analysis of `kneecap sweep` at its end and of `kneecap analyze RUN_DIR`.
func analyzeRun(res *sweep.Results, opts analysis.Options) *analysis.Result {
	levels := analysis.Summarize(res.Levels, res.Records, opts)
	meta := analysis.Meta{
		Name:       res.Config.Name,
		Model:      res.Config.Target.Model,
		Endpoint:   res.Endpoint,
		Source:     res.Dir,
		StopReason: res.StopReason,
	}
	if !res.Start.IsZero() {
		meta.Date = res.Start.UTC().Format(time.RFC3339)
	}
	r := analysis.Analyze(levels, meta, opts)
	return &r
}

// optionsFromConfig returns the analysis options of a run's configuration: its SLO (the
// article's defaults, TTFT p95 ≤ 2 s and TPOT p95 ≤ 50 ms, when the config sets none), knee
// gain, max error rate and capacity plan.
func optionsFromConfig(cfg sweep.Config) analysis.Options {
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

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func trimExt(name string) string { return name[:len(name)-len(filepath.Ext(name))] }
