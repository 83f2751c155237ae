package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
	"github.com/kneecap/kneecap/workload"
)

// Targets of issue 7 on a 2-core machine.
const (
	// targetCPUPerToken is the largest client CPU time per streamed token.
	targetCPUPerToken = 10 * time.Microsecond
	// targetRSSPerStream is the largest peak RSS per in-flight stream, in bytes.
	targetRSSPerStream = 64 << 10
	// targetRelErr and targetAbsErr bound |measured − configured| of TTFT and TPOT p50:
	// ≤ targetRelErr × configured + targetAbsErr.
	targetRelErr = 0.03
	targetAbsErr = time.Millisecond
	// fidelityMaxStreams is the largest level the fidelity target applies to.
	fidelityMaxStreams = 1024
	// memoryMinStreams is the smallest level whose average RSS per stream is checked against
	// targetRSSPerStream. Below it the process's fixed memory (≈ 5 MiB more than before the
	// sweep: runtime metadata and pages not yet returned to the OS) is a large share of the
	// average (≈ 19 KiB per stream at 256); the slope of peak RSS over the levels, the cost of
	// one more stream, is checked whenever there are two levels, and a single level's average
	// is checked whatever its size.
	memoryMinStreams = 1024
	// sustainedRatio is the smallest achieved ÷ target concurrency of a sustained level.
	sustainedRatio = 0.95
)

// config is the benchmark's command line.
type config struct {
	kneecap      string
	levels       []int
	ttft, itl    time.Duration
	outputTokens int
	inputTokens  int
	warmup       time.Duration
	duration     time.Duration
	maxDuration  time.Duration
	check        bool
	cpuProfile   string
	memProfile   string
	floor        bool
}

// simArgs is the `kneecap sim` command line: the fixed engine, which gives every request
// the configured TTFT and then one token every ITL, with unlimited capacity.
func (c config) simArgs() []string {
	return []string{"sim", "--profile", "fixed", "--addr", "127.0.0.1:0",
		"--ttft", c.ttft.String(), "--itl", c.itl.String(), "--output-tokens", strconv.Itoa(c.outputTokens)}
}

// idealTPS is the closed-loop output tokens/s of streams against a simulator that keeps its
// configured times: tokens per request ÷ E2E.
func (c config) idealTPS(streams int) float64 {
	e2e := c.ttft + time.Duration(c.outputTokens-1)*c.itl
	return float64(streams) * float64(c.outputTokens) / e2e.Seconds()
}

func parseFlags(stderr io.Writer, args []string) (config, error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	levels := fs.String("levels", "256,1024,4096,8192", "comma-separated concurrencies (streams)")
	fs.StringVar(&c.kneecap, "kneecap", "", "kneecap `binary` serving the simulator (default: go build ./cmd/kneecap)")
	fs.DurationVar(&c.ttft, "ttft", 500*time.Millisecond, "simulator TTFT")
	fs.DurationVar(&c.itl, "itl", 100*time.Millisecond, "simulator inter-token latency (tokens/s = streams ÷ itl)")
	fs.IntVar(&c.outputTokens, "output-tokens", 32, "output tokens per request")
	fs.IntVar(&c.inputTokens, "input-tokens", 64, "prompt tokens per request")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "minimum warmup per level")
	fs.DurationVar(&c.duration, "duration", 6*time.Second, "minimum measurement window per level")
	fs.DurationVar(&c.maxDuration, "max-duration", 12*time.Second, "longest measurement window per level")
	fs.BoolVar(&c.check, "check", true, "exit with an error when a target is missed")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the sweep to `file`")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a heap profile to `file` during the measurement window of the largest level")
	fs.BoolVar(&c.floor, "floor", true, "also run every level with the floor client (raw HTTP/1.1) to measure the per-token floor")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for f := range strings.SplitSeq(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return c, fmt.Errorf("-levels: %q is not a positive integer", f)
		}
		c.levels = append(c.levels, n)
	}
	if c.ttft <= 0 || c.itl <= 0 || c.outputTokens < 2 || c.inputTokens < 1 {
		return c, errors.New("-ttft and -itl must be > 0, -output-tokens ≥ 2 and -input-tokens ≥ 1")
	}
	return c, nil
}

// run is the benchmark: flags in args, the table on stdout, progress on stderr. newSim nil
// runs the kneecap binary (-kneecap, or built from the module).
func run(ctx context.Context, stdout, stderr io.Writer, args []string, newSim simCommand) error {
	cfg, err := parseFlags(stderr, args)
	if err != nil {
		return err
	}
	if cfg.memProfile != "" {
		// A sample per 4 KiB allocated instead of per 512 KiB: per-stream objects of a few
		// KiB show up. It costs CPU, so the figures of a profiled run are not the benchmark's.
		runtime.MemProfileRate = 4 << 10
	}
	maxC := slices.Max(cfg.levels)
	if err := ensureFDs(maxC); err != nil {
		return err
	}
	if newSim == nil {
		var cleanup func()
		if newSim, cleanup, err = binarySim(ctx, cfg.kneecap, stderr); err != nil {
			return err
		}
		defer cleanup()
	}

	simArgs := cfg.simArgs()
	sp, err := startSim(ctx, newSim, simArgs, stderr)
	if err != nil {
		return err
	}
	defer sp.stop()
	fmt.Fprintf(stderr, "load: simulator pid %d at %s: kneecap %s\n", sp.cmd.Process.Pid, sp.url, strings.Join(simArgs, " "))

	client, err := openai.New(openai.Options{
		BaseURL:        sp.url,
		Model:          sim.DefaultModel,
		RequestTimeout: 2 * time.Minute,
		MaxConns:       maxC,
		RecordChunks:   true,
	})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer client.Close()
	wl, err := cfg.workload()
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}

	smp := newSampler(sp.cmd.Process.Pid)
	if err := smp.sample(0); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	base := smp.last()
	sctx, stopSampler := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { smp.run(sctx) })
	defer func() { stopSampler(); wg.Wait() }()

	prof := &heapProfiler{path: cfg.memProfile, streams: maxC}
	plan := cfg.plan(wl, prof)
	fmt.Fprintf(stderr, "load: levels %v, baseline RSS %.1f MiB\n", cfg.levels, float64(base.rss)/(1<<20))
	if cfg.cpuProfile != "" {
		stop, err := startCPUProfile(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	sink := &benchSink{cfg: cfg, smp: smp, base: base, stderr: stderr, label: "kneecap client"}
	// The GC setting of `kneecap sweep` (the floor client below runs under it too).
	defer selfcheck.SetLoadGC()()
	out, err := runLabelled(ctx, "kneecap", func(ctx context.Context) (sweep.Outcome, error) {
		return sweep.Run(ctx, nil, plan, client, sink)
	})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if out.Interrupted {
		return errors.New("load: interrupted")
	}
	if sink.err != nil {
		return fmt.Errorf("load: %w", sink.err)
	}
	if prof.err != nil {
		return fmt.Errorf("load: %w", prof.err)
	}
	elapsed := out.Elapsed
	var floorRows []row
	if cfg.floor {
		// The floor runs second, after the kneecap client's pool is closed, from a new baseline.
		client.Close()
		fc, err := newFloorClient(sp.url, sim.DefaultModel)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		defer fc.close()
		var took time.Duration
		if floorRows, took, err = runFloor(ctx, cfg, plan, fc, smp, stderr); err != nil {
			return err
		}
		elapsed += took
	}
	miss := report(stdout, cfg, sink.rows, floorRows, elapsed)
	if cfg.check && len(miss) > 0 {
		return fmt.Errorf("load: %d target(s) missed: %s", len(miss), strings.Join(miss, "; "))
	}
	return nil
}

// ensureFDs raises the open-file limit for maxC streams: both ends of every stream live on
// this machine; the simulator child inherits the limit.
func ensureFDs(maxC int) error {
	if lim, err := raiseFDLimit(uint64(2*maxC + 1024)); err != nil {
		return fmt.Errorf("load: %w", err)
	} else if lim < uint64(maxC+256) {
		return fmt.Errorf("load: open-file limit %d is too low for %d streams (raise ulimit -n)", lim, maxC)
	}
	return nil
}

// workload is the benchmark's workload: fixed prompt and output lengths, the output forced
// (ignore_eos), the chat API.
func (c config) workload() (workload.Workload, error) {
	return workload.NewWorkload(workload.WorkloadConfig{
		InputTokens:  workload.Dist{Dist: workload.DistFixed, Mean: float64(c.inputTokens)},
		OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: float64(c.outputTokens)},
		FixedOutput:  true,
		Seed:         1,
	}, record.APIChat)
}

// plan is the sweep of the benchmark's levels: the command line's warmup and windows, at
// least 100 completions per window, obs watching the levels.
func (c config) plan(wl workload.Workload, obs sweep.Observer) sweep.Plan {
	return sweep.Plan{
		Levels: c.levels,
		Protocol: sweep.Protocol{
			Warmup:       c.warmup,
			WarmupMax:    2 * time.Minute,
			Duration:     c.duration,
			MinRequests:  100,
			MaxDuration:  c.maxDuration,
			CITarget:     0.05,
			DrainTimeout: 30 * time.Second,
		},
		Workload: wl,
		Observer: obs,
	}
}

// startCPUProfile starts the CPU profile (-cpuprofile) into path; stop ends it and closes the
// file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("load: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// runFloor runs plan's levels again with the floor client fc, from a new memory and CPU
// baseline, and returns their rows and how long they took.
func runFloor(ctx context.Context, cfg config, plan sweep.Plan, fc *floorClient, smp *sampler, stderr io.Writer) ([]row, time.Duration, error) {
	debug.FreeOSMemory() // so that the floor's RSS growth is measured from a fresh baseline
	fbase := smp.last()
	if err := smp.sample(fbase.benchCPU); err != nil {
		return nil, 0, fmt.Errorf("load: %w", err)
	}
	fsink := &benchSink{cfg: cfg, smp: smp, base: smp.last(), stderr: stderr, label: "floor client"}
	plan.Observer = nil
	fout, err := runLabelled(ctx, "floor", func(ctx context.Context) (sweep.Outcome, error) {
		return sweep.Run(ctx, nil, plan, fc, fsink)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("load: floor: %w", err)
	}
	if fout.Interrupted {
		return nil, 0, errors.New("load: interrupted")
	}
	if fsink.err != nil {
		return nil, 0, fmt.Errorf("load: floor: %w", fsink.err)
	}
	return fsink.rows, fout.Elapsed, nil
}

// binarySim is the simCommand of the kneecap binary bin, built from the module into a
// temporary directory when bin is ""; cleanup removes that directory.
func binarySim(ctx context.Context, bin string, stderr io.Writer) (newSim simCommand, cleanup func(), err error) {
	cleanup = func() {}
	if bin == "" {
		tmp, err := os.MkdirTemp("", "kneecap-load-")
		if err != nil {
			return nil, nil, fmt.Errorf("load: %w", err)
		}
		cleanup = func() { os.RemoveAll(tmp) }
		bin = filepath.Join(tmp, "kneecap")
		fmt.Fprintln(stderr, "load: building ./cmd/kneecap")
		if err := buildKneecap(ctx, bin); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	return func(ctx context.Context, args []string) *exec.Cmd { return exec.CommandContext(ctx, bin, args...) }, cleanup, nil
}

// runLabelled runs a client's levels under the profiler label client=name, which every
// goroutine they start inherits (workers, net/http's dial, read and write loops): `go tool
// pprof -tagfocus client=floor` then separates the two clients' samples of one -cpuprofile
// (the runtime's own goroutines and its scheduler on g0 carry no label).
func runLabelled(ctx context.Context, name string, run func(context.Context) (sweep.Outcome, error)) (out sweep.Outcome, err error) {
	pprof.Do(ctx, pprof.Labels("client", name), func(ctx context.Context) { out, err = run(ctx) })
	return out, err
}
