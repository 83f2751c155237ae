package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/rundir"
)

const analyzeUsage = "PATH [-o DIR] [--slo-ttft-p95 D] [--slo-tpot-p95 D] [--slo-e2e-p95 D] [--knee-gain F]\n" +
	"                       [--plan-users N] [--plan-qps F] [--plan-output-tps F] [--replica-cost-per-hour F]\n" +
	"                       [--gpus-per-replica N]\n\n" +
	"PATH is a results directory (with levels.json), a level-summary CSV, or a directory of\n" +
	"vLLM `bench serve` result JSON files. Writes DIR/analysis.json, DIR/summary.csv, the charts\n" +
	"and report.md / report.html. DIR defaults to PATH for a results directory. A results\n" +
	"directory without records.jsonl is analyzed from its summary.csv, into a DIR of its own.\n\n" +
	"The --plan flags set the capacity plan (the config's plan:) without a new sweep: the\n" +
	"replicas needed for that load at the SLO point and at the knee, and with a replica's cost,\n" +
	"$/hour and $ per 1M output tokens."

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
	users := fl.Int("plan-users", 0, "capacity plan: concurrent users `N` to serve (overrides plan.concurrent_users)")
	planQPS := fl.Float64("plan-qps", 0, "capacity plan: requests/s to serve (overrides plan.qps)")
	planTPS := fl.Float64("plan-output-tps", 0, "capacity plan: output tokens/s to serve (overrides plan.output_tps)")
	cost := fl.Float64("replica-cost-per-hour", 0, "capacity plan: $ per replica-hour (overrides plan.replica_cost_per_hour)")
	gpus := fl.Int("gpus-per-replica", 0, "capacity plan: GPUs per replica `N` (overrides plan.gpus_per_replica)")
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
	for _, f := range []struct {
		name string
		v    float64
	}{{"plan-users", float64(*users)}, {"plan-qps", *planQPS}, {"plan-output-tps", *planTPS},
		{"replica-cost-per-hour", *cost}, {"gpus-per-replica", float64(*gpus)}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return usageError("analyze: --%s %g: must be a number ≥ 0", f.name, f.v)
		}
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
		if set["plan-users"] {
			o.Plan.ConcurrentUsers = *users
		}
		if set["plan-qps"] {
			o.Plan.QPS = *planQPS
		}
		if set["plan-output-tps"] {
			o.Plan.OutputTPS = *planTPS
		}
		if set["replica-cost-per-hour"] {
			o.Plan.ReplicaCostPerHour = *cost
		}
		if set["gpus-per-replica"] {
			o.Plan.GPUsPerReplica = *gpus
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
	case st.IsDir() && exists(filepath.Join(path, rundir.LevelsFile)) && !exists(filepath.Join(path, rundir.RecordsFile)):
		// A results directory kept without its (large) records: its level summary is analyzed.
		r, err := analyzeSummary(e, path, outDir, override)
		if err != nil {
			return err
		}
		res = r
	case st.IsDir() && exists(filepath.Join(path, rundir.LevelsFile)):
		run, err := rundir.Read(path)
		if err == nil {
			err = rundir.CheckNotShard(run)
		}
		if err != nil {
			return withCode(exitUsage, fmt.Errorf("analyze: %w", err))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		res = analyzeRun(run, override(run.Config.AnalysisOptions()))
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
	if err := rundir.WriteFileAtomic(filepath.Join(dir, "analysis.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	var csv bytes.Buffer
	if err := report.WriteCSV(&csv, res.Levels); err != nil {
		return fmt.Errorf("analyze: summary.csv: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, "summary.csv"), csv.Bytes()); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// analyzeRun summarizes a results directory's records per level and analyzes them: the
// analysis of `kneecap sweep` at its end and of `kneecap analyze RUN_DIR`.
func analyzeRun(res *rundir.Run, opts analysis.Options) *analysis.Result {
	levels := analysis.Summarize(res.Levels, opts)
	r := analysis.Analyze(levels, runMeta(res), opts)
	return &r
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
		Server:         res.Server,
		Kneecap:        res.Kneecap,
	}
	if !res.Start.IsZero() {
		meta.Date = res.Start.UTC().Format(time.RFC3339)
	}
	return meta
}

// analyzeSummary analyzes a results directory that has config.yaml and levels.json but no
// records.jsonl (examples/sample-run, or a run whose records were deleted) from its
// summary.csv, with the run's name, model, endpoint, date and stop reason and its config's
// analysis options; it says so on stderr. Without summary.csv it is a usage error naming both
// missing files. *outDir must be given: analyzing in place would replace the directory's
// analysis.json, computed from the records, with one computed from their summary. A run that
// measured no level is read as any results directory (*outDir defaults to dir).
func analyzeSummary(e *env, dir string, outDir *string, override func(analysis.Options) analysis.Options) (*analysis.Result, error) {
	head, err := rundir.ReadMeta(dir)
	if err == nil {
		err = rundir.CheckNotShard(head)
	}
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("analyze: %w", err))
	}
	if len(head.Levels) == 0 {
		// Nothing was measured: ReadResults reads such a directory without records.jsonl.
		run, err := rundir.Read(dir)
		if err != nil {
			return nil, withCode(exitUsage, fmt.Errorf("analyze: %w", err))
		}
		if *outDir == "" {
			*outDir = dir
		}
		return analyzeRun(run, override(run.Config.AnalysisOptions())), nil
	}
	csvPath := filepath.Join(dir, "summary.csv")
	if !exists(csvPath) {
		return nil, usageError("analyze: %s has no %s and no summary.csv: nothing to analyze", dir, rundir.RecordsFile)
	}
	if *outDir == "" {
		return nil, usageError("analyze: %s has no %s: -o DIR is required (analyzing its summary.csv in place would replace its analysis.json)", dir, rundir.RecordsFile)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return nil, usageError("analyze: %w", err)
	}
	summary, err := report.ReadCSV(f, csvPath)
	f.Close()
	if err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("analyze: %w", err))
	}
	fmt.Fprintf(e.stderr, "kneecap: analyze: %s has no %s: analyzing its summary.csv\n", dir, rundir.RecordsFile)
	r := analysis.Analyze(summary, runMeta(head), override(head.Config.AnalysisOptions()))
	return &r, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func trimExt(name string) string { return name[:len(name)-len(filepath.Ext(name))] }
