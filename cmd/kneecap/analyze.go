package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/internal/grid"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/summary"
)

const analyzeUsage = "PATH [-o DIR] [--format text|json] [--slo METRIC:PCT:D]... [--slo-ttft-p95 D] [--slo-tpot-p95 D] [--slo-e2e-p95 D]\n" +
	"                       [--knee-gain F] [--bootstrap N] [--plan-users N] [--plan-qps F]\n" +
	"                       [--plan-output-tps F] [--replica-cost-per-hour F] [--gpus-per-replica N]\n" +
	"                       [--energy-cost-per-kwh F]\n\n" +
	"PATH is a results directory (with levels.json), a level-summary CSV, or a directory of\n" +
	"vLLM `bench serve` result JSON files. Writes DIR/analysis.json, DIR/summary.csv, the charts\n" +
	"and report.md / report.html. DIR defaults to PATH for a results directory. A results\n" +
	"directory without records.jsonl is analyzed from its summary.csv, into a DIR of its own.\n" +
	"A scenario grid's directory is re-analyzed in place, every scenario, and its combined\n" +
	"report and Pareto chart rewritten.\n\n" +
	"The --plan flags set the capacity plan (the config's plan:) without a new sweep: the\n" +
	"replicas needed for that load at the SLO point and at the knee, and with a replica's cost,\n" +
	"$/hour and $ per 1M output tokens; with GPU telemetry, its power, kWh per 1M output tokens\n" +
	"and, with an electricity price, their cost."

// cmdAnalyze implements `kneecap analyze`: it reproduces every number of a run offline from
// its files (or analyzes a level-summary CSV or vLLM bench results) and writes analysis.json,
// summary.csv and the reports. A missing PATH or a malformed input file is a usage error
// (exit 2) naming the file, and for a CSV the line and the column.
func cmdAnalyze(ctx context.Context, e *env, args []string) error {
	ctx, release := untilInterrupt(ctx, e)
	defer release()
	fl := newFlagSet(e, "analyze", analyzeUsage)
	outDir := fl.String("o", "", "output `DIR` (default: PATH for a results directory; required otherwise)")
	format := formatFlag(fl)
	var af analyzeFlags
	af.register(fl)
	wideFlag(fl, e)
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cmdUsageError("analyze", "analyze: want one PATH, got %d", len(pos))
	}
	if err := af.check(); err != nil {
		return err
	}
	if err := checkFormat("analyze", *format); err != nil {
		return err
	}
	out := e
	e = forFormat(e, *format)
	af.set = map[string]bool{}
	fl.Visit(func(f *flag.Flag) { af.set[f.Name] = true })

	path := pos[0]
	if grid.IsDir(path) {
		if *outDir != "" && !samePath(*outDir, path) {
			return usageError("analyze: %s is a scenario grid: it is re-analyzed in place (leave -o out), or analyze one scenario with kneecap analyze %s -o DIR",
				path, filepath.Join(path, "NAME"))
		}
		if *format != "text" {
			return cmdUsageError("analyze", "analyze: --format %s: a scenario grid prints its table of knees; read each %s", *format, filepath.Join(path, "NAME", rundir.AnalysisFile))
		}
		return analyzeGrid(ctx, e, path, &af)
	}
	if *outDir != "" && !samePath(*outDir, path) {
		if err := rundir.CheckOutput(*outDir, rundir.AnalyzeOutput); err != nil {
			return usageError("analyze: -o: %w", err)
		}
	}
	in, err := summary.LoadContext(ctx, path, *outDir == "" || samePath(*outDir, path))
	if err := interruptError(ctx, "analyze", nothingWritten); err != nil {
		return err
	}
	switch {
	case errors.Is(err, summary.ErrInPlace):
		why := strings.TrimSuffix(err.Error(), ": "+summary.ErrInPlace.Error())
		return usageError("analyze: %s: -o DIR is required (analyzing it in place would replace the analysis.json, summary.csv and reports made from its records with an analysis of what is left)", why)
	case err != nil:
		return withCode(exitUsage, fmt.Errorf("analyze: %w", err))
	}
	if *outDir == "" {
		if !in.InPlace() {
			return cmdUsageError("analyze", "analyze: -o DIR is required when PATH is not a results directory")
		}
		*outDir = path
	}
	if in.Kind == summary.ResultsSummary {
		fmt.Fprintf(e.stderr, "kneecap: analyze: %s: analyzing its summary.csv\n", in.Why)
	}
	if err := interruptError(ctx, "analyze", nothingWritten); err != nil {
		return err
	}
	opts := af.apply(in.Options, ctx.Done())
	if s := opts.SLO.StreamObjectives(); len(s) > 0 && !opts.API.Streams() {
		return cmdUsageError("analyze", "analyze: --slo %s:p%d: %s is an embeddings run: its answers arrive whole, with no TTFT, TPOT or ITL; set its latency instead (--slo e2e:p95:D)", s[0].Metric, s[0].Percentile, path)
	}
	res := in.Analyze(opts)
	if err := interruptError(ctx, "analyze", nothingWritten); err != nil {
		return err
	}
	if err := writeResults(ctx, e, *outDir, res, "analyze", nothingWritten); err != nil {
		return err
	}
	return printAnalysis(out, *format, *outDir)
}

// samePath reports whether a and b name the same existing file or directory (analyze RUN
// -o RUN is analyze RUN).
func samePath(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// analyzeFlags are the flags of `kneecap analyze` that override the run's analysis options.
type analyzeFlags struct {
	slo  sloFlags
	gain float64
	boot int
	plan planFlags
	set  map[string]bool // the flags given on the command line
}

// register defines the flags on fl.
func (f *analyzeFlags) register(fl *flag.FlagSet) {
	f.slo.register(fl, "the run's config")
	fl.Float64Var(&f.gain, "knee-gain", 0, "throughput gain per doubling below which the efficient point (and a smooth curve's knee) is reached (default 0.10 or the run's config)")
	fl.IntVar(&f.boot, "bootstrap", analysis.DefaultOptions().Bootstrap, "bootstrap resamples for the knee interval (0 = none)")
	f.plan.register(fl)
}

// maxBootstrap bounds --bootstrap: each resample refits every model, so 10⁹ of them ran for
// hours (and ignored Ctrl-C while they did).
const maxBootstrap = 100_000

// check returns a usage error for a flag value out of range.
func (f *analyzeFlags) check() error {
	if !(f.gain >= 0 && f.gain < 1) { // NaN too
		return cmdUsageError("analyze", "analyze: --knee-gain %g: want a fraction in (0, 1)", f.gain)
	}
	if f.slo.negative() || f.boot < 0 {
		return cmdUsageError("analyze", "analyze: SLOs and --bootstrap must not be negative")
	}
	if f.boot > maxBootstrap {
		return cmdUsageError("analyze", "analyze: --bootstrap %d: at most %d resamples (the default %d gives the knee's interval to a few percent)",
			f.boot, maxBootstrap, analysis.DefaultOptions().Bootstrap)
	}
	return f.plan.check("analyze")
}

// apply returns o with the flags given on the command line applied, the bootstrap count always
// (its default is analysis.DefaultOptions's), and stop (an interrupt: ctx.Done) ending the
// bootstrap.
func (f *analyzeFlags) apply(o analysis.Options, stop <-chan struct{}) analysis.Options {
	o.Stop = stop
	o.SLO = f.slo.apply(o.SLO, f.set)
	if f.set["knee-gain"] && f.gain > 0 {
		o.KneeGain = f.gain
	}
	o.Plan = f.plan.apply(o.Plan, f.set)
	o.Bootstrap = f.boot
	return o
}
