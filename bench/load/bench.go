package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
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

// sampleEvery is the period of the CPU and RSS sampler.
const sampleEvery = 20 * time.Millisecond

// simCommand makes the command that serves the simulator with the given `kneecap sim`
// arguments; tests replace it to avoid building the binary.
type simCommand func(ctx context.Context, args []string) *exec.Cmd

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
	levels := fs.String("levels", "256,1024,4096", "comma-separated concurrencies (streams)")
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
	// Both ends of every stream live on this machine; the simulator child inherits the limit.
	if lim, err := raiseFDLimit(uint64(2*maxC + 1024)); err != nil {
		return fmt.Errorf("load: %w", err)
	} else if lim < uint64(maxC+256) {
		return fmt.Errorf("load: open-file limit %d is too low for %d streams (raise ulimit -n)", lim, maxC)
	}
	if newSim == nil {
		bin := cfg.kneecap
		if bin == "" {
			tmp, err := os.MkdirTemp("", "kneecap-load-")
			if err != nil {
				return fmt.Errorf("load: %w", err)
			}
			defer os.RemoveAll(tmp)
			bin = filepath.Join(tmp, "kneecap")
			fmt.Fprintln(stderr, "load: building ./cmd/kneecap")
			if err := buildKneecap(ctx, bin); err != nil {
				return err
			}
		}
		newSim = func(ctx context.Context, args []string) *exec.Cmd { return exec.CommandContext(ctx, bin, args...) }
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
	wl, err := sweep.NewWorkload(sweep.WorkloadConfig{
		InputTokens:  sweep.Dist{Dist: sweep.DistFixed, Mean: float64(cfg.inputTokens)},
		OutputTokens: sweep.Dist{Dist: sweep.DistFixed, Mean: float64(cfg.outputTokens)},
		FixedOutput:  true,
		Seed:         1,
	}, sweep.APIChat)
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
	plan := sweep.Plan{
		Levels: cfg.levels,
		Protocol: sweep.Protocol{
			Warmup:       cfg.warmup,
			WarmupMax:    2 * time.Minute,
			Duration:     cfg.duration,
			MinRequests:  100,
			MaxDuration:  cfg.maxDuration,
			CITarget:     0.05,
			DrainTimeout: 30 * time.Second,
		},
		Workload: wl,
		Observer: prof,
	}
	fmt.Fprintf(stderr, "load: levels %v, baseline RSS %.1f MiB\n", cfg.levels, float64(base.rss)/(1<<20))
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("load: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	sink := &benchSink{cfg: cfg, smp: smp, base: base, stderr: stderr, label: "kneecap client"}
	// The GC setting of `kneecap sweep` (the floor client below runs under it too).
	defer sweep.SetLoadGC()()
	out, err := sweep.Run(ctx, nil, plan, client, sink)
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
		debug.FreeOSMemory() // so that the floor's RSS growth is measured from a fresh baseline
		fbase := smp.last()
		if err := smp.sample(fbase.benchCPU); err != nil {
			return fmt.Errorf("load: %w", err)
		}
		fsink := &benchSink{cfg: cfg, smp: smp, base: smp.last(), stderr: stderr, label: "floor client"}
		plan.Observer = nil
		fout, err := sweep.Run(ctx, nil, plan, fc, fsink)
		if err != nil {
			return fmt.Errorf("load: floor: %w", err)
		}
		if fout.Interrupted {
			return errors.New("load: interrupted")
		}
		if fsink.err != nil {
			return fmt.Errorf("load: floor: %w", fsink.err)
		}
		floorRows = fsink.rows
		elapsed += fout.Elapsed
	}
	miss := report(stdout, cfg, sink.rows, floorRows, elapsed)
	if cfg.check && len(miss) > 0 {
		return fmt.Errorf("load: %d target(s) missed: %s", len(miss), strings.Join(miss, "; "))
	}
	return nil
}

// buildKneecap builds ./cmd/kneecap of the module containing the working directory into bin.
func buildKneecap(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("load: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return errors.New("load: not inside the kneecap module: run from the repository or pass -kneecap")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kneecap")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("load: go build ./cmd/kneecap: %w\n%s", err, out)
	}
	return nil
}

// servingLine matches the line `kneecap sim` prints once it listens.
var servingLine = regexp.MustCompile(`serving (http://\S+)`)

// simProc is the simulator child process.
type simProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when the stderr reader has finished
}

// startSim starts the simulator and waits (≤ 30 s) for it to print its URL; the rest of its
// stderr is copied to stderr.
func startSim(ctx context.Context, newSim simCommand, args []string, stderr io.Writer) (*simProc, error) {
	cmd := newSim(ctx, args)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("load: simulator: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("load: start simulator: %w", err)
	}
	sp := &simProc{cmd: cmd, done: make(chan struct{})}
	urlc := make(chan string, 1)
	go func() {
		defer close(sp.done)
		sc := bufio.NewScanner(pipe)
		found := false
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				urlc <- m[1]
				continue
			}
			fmt.Fprintln(stderr, "sim:", sc.Text())
		}
		_, _ = io.Copy(io.Discard, pipe)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case sp.url = <-urlc:
		return sp, nil
	case <-sp.done:
		sp.stop()
		return nil, errors.New("load: simulator exited before serving")
	case <-t.C:
	case <-ctx.Done():
	}
	sp.stop()
	return nil, errors.New("load: simulator did not report its URL within 30 s")
}

// stop interrupts the simulator, kills it if it has not exited 5 s later, and waits for it.
func (sp *simProc) stop() {
	_ = sp.cmd.Process.Signal(os.Interrupt)
	exited := make(chan struct{})
	go func() {
		<-sp.done // Wait must follow the last read from the pipe
		_ = sp.cmd.Wait()
		close(exited)
	}()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
		return
	case <-t.C:
	}
	_ = sp.cmd.Process.Kill()
	<-exited
}

// sample is one reading of the sampler: Unix ns, this process's CPU time and RSS, the
// sampler's own CPU time so far, the Go runtime's memory figures and the simulator's CPU time.
type sample struct {
	t        int64
	cpu      time.Duration
	benchCPU time.Duration // the sampler thread's CPU time so far: the benchmark's own cost
	rss      int64
	mem      goMem
	simCPU   time.Duration
}

// goMem is the Go runtime's view of this process's memory (runtime/metrics, which does not
// stop the world).
type goMem struct {
	heap       int64 // bytes of heap objects, live or not yet swept
	stacks     int64 // bytes of goroutine stacks
	goroutines int64
}

// memMetrics are the runtime/metrics read into goMem, in goMem's order.
var memMetrics = [...]string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/sched/goroutines:goroutines",
}

// sampler reads CPU and memory every sampleEvery. Its goroutine is locked to one OS thread
// whose CPU time it records, so the benchmark's own sampling is not billed to the client.
type sampler struct {
	pid int
	mu  sync.Mutex
	ms  []metrics.Sample // preallocated: sample allocates nothing but the /proc reads
	s   []sample
	err error
}

func newSampler(pid int) *sampler {
	s := &sampler{pid: pid, ms: make([]metrics.Sample, len(memMetrics))}
	for i, name := range memMetrics {
		s.ms[i].Name = name
	}
	return s
}

// sample takes one reading; benchCPU is the sampler thread's CPU time so far.
func (s *sampler) sample(benchCPU time.Duration) error {
	cpu, err := selfCPU()
	if err != nil {
		return err
	}
	rss, err := vmRSS()
	if err != nil {
		return err
	}
	simCPU, err := procCPU(s.pid)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.ms)
	var mem goMem
	for i, v := range []*int64{&mem.heap, &mem.stacks, &mem.goroutines} {
		if s.ms[i].Value.Kind() == metrics.KindUint64 {
			*v = int64(s.ms[i].Value.Uint64())
		}
	}
	s.s = append(s.s, sample{t: time.Now().UnixNano(), cpu: cpu, benchCPU: benchCPU, rss: rss, mem: mem, simCPU: simCPU})
	return nil
}

func (s *sampler) last() sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s[len(s.s)-1]
}

func (s *sampler) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *sampler) run(ctx context.Context) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, err := threadCPU()
	if err != nil {
		s.fail(err)
		return
	}
	tk := time.NewTicker(sampleEvery)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			t, err := threadCPU()
			if err != nil {
				s.fail(err)
				return
			}
			if err := s.sample(t - t0); err != nil {
				s.fail(err)
				return
			}
		}
	}
}

// span is what the sampler saw over one level.
type span struct {
	cpu, benchCPU, simCPU time.Duration // over the window, interpolated
	peakRSS               int64         // largest RSS sampled during the level
	peakMem               goMem         // largest of each Go memory figure during the level
}

// between returns the CPU times over [t0, t1), linearly interpolated between samples, and the
// largest memory figures sampled in [r0, r1].
func (s *sampler) between(t0, t1, r0, r1 int64) (span, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return span{}, s.err
	}
	type cpus struct{ cpu, bench, sim time.Duration }
	at := func(t int64) cpus {
		i, _ := slices.BinarySearchFunc(s.s, t, func(x sample, t int64) int { return cmp.Compare(x.t, t) })
		switch {
		case i == 0:
			return cpus{s.s[0].cpu, s.s[0].benchCPU, s.s[0].simCPU}
		case i == len(s.s):
			x := s.s[i-1]
			return cpus{x.cpu, x.benchCPU, x.simCPU}
		}
		a, b := s.s[i-1], s.s[i]
		f := float64(t-a.t) / float64(b.t-a.t)
		lerp := func(x, y time.Duration) time.Duration { return x + time.Duration(f*float64(y-x)) }
		return cpus{lerp(a.cpu, b.cpu), lerp(a.benchCPU, b.benchCPU), lerp(a.simCPU, b.simCPU)}
	}
	c0, c1 := at(t0), at(t1)
	sp := span{cpu: c1.cpu - c0.cpu, benchCPU: c1.bench - c0.bench, simCPU: c1.sim - c0.sim}
	for _, x := range s.s {
		if x.t >= r0 && x.t <= r1 {
			sp.peakRSS = max(sp.peakRSS, x.rss)
			sp.peakMem.heap = max(sp.peakMem.heap, x.mem.heap)
			sp.peakMem.stacks = max(sp.peakMem.stacks, x.mem.stacks)
			sp.peakMem.goroutines = max(sp.peakMem.goroutines, x.mem.goroutines)
		}
	}
	return sp, nil
}

// row is the figures of one level.
type row struct {
	streams        int
	achieved       float64
	tps, idealTPS  float64
	tokens         float64
	window         time.Duration
	cpu            time.Duration // client CPU over the window: process CPU − the sampler's
	benchCPU       time.Duration // the sampler's own CPU over the window (excluded from cpu)
	simUtil        float64       // simulator CPU ÷ (window × cores)
	rssPerStream   float64       // bytes
	heapPerStream  float64       // bytes of Go heap objects at peak − before the sweep, ÷ streams
	stackPerStream float64       // bytes of goroutine stacks at peak − before the sweep, ÷ streams
	gPerStream     float64       // goroutines at peak − before the sweep, ÷ streams
	ttft, tpot     float64       // p50, ms
	errs, requests int
	steady         bool
	client         *sweep.ClientStats
}

// cpuPerToken is the client CPU time per streamed token.
func (r row) cpuPerToken() time.Duration { return perToken(r.cpu, r.tokens) }

func perToken(d time.Duration, tokens float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	return time.Duration(float64(d) / tokens)
}

// benchSink computes each level's figures as it finishes and keeps no records.
type benchSink struct {
	cfg    config
	smp    *sampler
	base   sample
	stderr io.Writer
	label  string
	rows   []row
	err    error
}

func (b *benchSink) LevelDone(l sweep.Level) error {
	run := l.Run
	lv := analysis.Summarize([]sweep.Level{l}, analysis.DefaultOptions())[0]
	sp, err := b.smp.between(run.W0, run.W1, run.WarmupStart, run.DrainEnd)
	if err != nil {
		return err
	}
	win := run.Window()
	c := float64(run.Concurrency)
	r := row{
		streams:        run.Concurrency,
		achieved:       float64(lv.AchievedConcurrency),
		tps:            float64(lv.OutputTPS),
		idealTPS:       b.cfg.idealTPS(run.Concurrency),
		tokens:         float64(lv.OutputTPS) * win.Seconds(),
		window:         win,
		cpu:            sp.cpu - sp.benchCPU,
		benchCPU:       sp.benchCPU,
		simUtil:        float64(sp.simCPU) / (float64(win) * float64(runtime.NumCPU())),
		rssPerStream:   float64(sp.peakRSS-b.base.rss) / c,
		heapPerStream:  float64(sp.peakMem.heap-b.base.mem.heap) / c,
		stackPerStream: float64(sp.peakMem.stacks-b.base.mem.stacks) / c,
		gPerStream:     float64(sp.peakMem.goroutines-b.base.mem.goroutines) / c,
		ttft:           float64(lv.TTFT.P50),
		tpot:           float64(lv.TPOT.P50),
		errs:           lv.Errors,
		requests:       lv.Requests,
		steady:         run.Steady,
		client:         run.Client,
	}
	b.rows = append(b.rows, r)
	fmt.Fprintf(b.stderr, "load: %s, %d streams: %.0f tokens/s, %.2f µs CPU/token, %.1f KiB RSS/stream (heap %.1f, stacks %.1f, %.2f goroutines), TTFT p50 %.1f ms, TPOT p50 %.2f ms\n",
		b.label, r.streams, r.tps, float64(r.cpuPerToken())/1e3, r.rssPerStream/1024, r.heapPerStream/1024, r.stackPerStream/1024, r.gPerStream, r.ttft, r.tpot)
	return nil
}

func (b *benchSink) Finish(string) error { return nil }

// heapProfiler is the Observer that writes the heap profile (-memprofile) once, during the
// measurement window of the largest level, while every stream is in flight.
type heapProfiler struct {
	path    string
	streams int
	done    bool
	err     error
}

func (h *heapProfiler) LevelStarted(int, int) {}

func (h *heapProfiler) Live(s sweep.LiveStats) {
	if h.done || h.path == "" || s.Concurrency != h.streams || s.Phase != sweep.PhaseMeasure {
		return
	}
	h.done = true
	f, err := os.Create(h.path)
	if err != nil {
		h.err = fmt.Errorf("memprofile: %w", err)
		return
	}
	// The profile is as of the last GC; one more makes it describe the streams in flight.
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		h.err = fmt.Errorf("memprofile: %w", err)
	}
	if err := f.Close(); err != nil && h.err == nil {
		h.err = fmt.Errorf("memprofile: %w", err)
	}
}

func (h *heapProfiler) LevelFinished(sweep.Level) {}

// report prints the tables and the targets; it returns the missed targets. floor holds the
// floor client's rows (may be empty).
func report(w io.Writer, cfg config, rows, floor []row, elapsed time.Duration) []string {
	fmt.Fprintf(w, "kneecap end-to-end load benchmark: %s, %d CPUs, GOMAXPROCS %d, %s/%s, %s\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(w, "simulator (separate process): kneecap sim --profile fixed --ttft %s --itl %s; %d output tokens, 1 token/chunk; %s total\n\n",
		cfg.ttft, cfg.itl, cfg.outputTokens, elapsed.Round(time.Second))
	ttftCfg := ms(cfg.ttft)
	tpotCfg := ms(cfg.itl)
	table := func(title string, rows []row) {
		fmt.Fprintln(w, title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		var notes []string
		fmt.Fprintln(tw, "streams\tachieved\ttokens/s\t(ideal)\tCPU µs/tok\t(bench)\tRSS KiB/str\theap\tstacks\tgoroutines\tTTFT p50 ms\terr\tTPOT p50 ms\terr\tsched p99\tbound\tsim CPU\terrors\t")
		for _, r := range rows {
			sched, bound := "-", "-"
			if r.client != nil {
				sched = r.client.SchedLatencyP99.Round(time.Microsecond).String()
				bound = "no"
				if r.client.Bound {
					bound = "yes"
					notes = append(notes, fmt.Sprintf("%d streams: client-bound: %s", r.streams, r.client.Reason))
				}
			}
			fmt.Fprintf(tw, "%d\t%.1f\t%.0f\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%+.2f%%\t%.3f\t%+.2f%%\t%s\t%s\t%.0f%%\t%d/%d\t\n",
				r.streams, r.achieved, r.tps, r.idealTPS, float64(r.cpuPerToken())/1e3, float64(perToken(r.benchCPU, r.tokens))/1e3,
				r.rssPerStream/1024, r.heapPerStream/1024, r.stackPerStream/1024, r.gPerStream,
				r.ttft, 100*(r.ttft-ttftCfg)/ttftCfg, r.tpot, 100*(r.tpot-tpotCfg)/tpotCfg,
				sched, bound, 100*r.simUtil, r.errs, r.requests)
		}
		_ = tw.Flush()
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
		fmt.Fprintln(w)
	}
	table("kneecap client (sweep/openai on go-openai):", rows)
	if len(floor) > 0 {
		table("floor client (raw HTTP/1.1, 1 KiB buffer, no JSON decoding; the cost any Go client pays per chunk):", floor)
	}
	fmt.Fprintln(w, "CPU µs/tok: getrusage(RUSAGE_SELF) over the window − the sampler thread's own CPU (bench column), ÷ tokens arrived in the window;")
	fmt.Fprintln(w, "RSS: (peak VmRSS during the level − VmRSS before the sweep) ÷ streams; heap, stacks: the same for Go heap objects and goroutine stacks (KiB);")
	fmt.Fprintln(w, "goroutines: extra goroutines per stream at peak; err: (measured − configured) ÷ configured; sim CPU: the simulator's CPU ÷ (window × CPUs).")
	fixedRSS, slope, fit := rssSlope(rows)
	if fit {
		fmt.Fprintf(w, "peak RSS over the levels (least squares): %.1f MiB + %.1f KiB × streams\n", fixedRSS/(1<<20), slope/1024)
	}

	var miss []string
	check := func(ok bool, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		verdict := "PASS"
		if !ok {
			verdict = "FAIL"
			miss = append(miss, msg)
		}
		fmt.Fprintf(w, "%s  %s\n", verdict, msg)
	}
	fmt.Fprintln(w)
	if fit {
		check(slope <= targetRSSPerStream, "memory per stream (slope of peak RSS over the levels) %.1f KiB ≤ %d KiB", slope/1024, targetRSSPerStream>>10)
	}
	for i, r := range rows {
		check(r.errs == 0 && r.achieved >= sustainedRatio*float64(r.streams),
			"%d streams sustained: achieved %.1f ≥ %.0f%%, %d errors", r.streams, r.achieved, 100*sustainedRatio, r.errs)
		floorNote := ""
		if i < len(floor) && floor[i].streams == r.streams {
			f := floor[i].cpuPerToken()
			floorNote = fmt.Sprintf(" (floor client %.2f µs/token; kneecap's own cost %.2f µs/token)", float64(f)/1e3, float64(r.cpuPerToken()-f)/1e3)
		}
		check(r.cpuPerToken() <= targetCPUPerToken, "%d streams: client CPU %.2f µs/token ≤ %s%s", r.streams, float64(r.cpuPerToken())/1e3, targetCPUPerToken, floorNote)
		// Without a slope (one level) the average is all there is: check it at any level.
		if r.streams >= memoryMinStreams || !fit {
			check(r.rssPerStream <= targetRSSPerStream, "%d streams: %.1f KiB/stream ≤ %d KiB", r.streams, r.rssPerStream/1024, targetRSSPerStream>>10)
		}
		if r.streams <= fidelityMaxStreams {
			for _, m := range []struct {
				name      string
				got, want float64
			}{{"TTFT", r.ttft, ttftCfg}, {"TPOT", r.tpot, tpotCfg}} {
				tol := targetRelErr*m.want + ms(targetAbsErr)
				check(math.Abs(m.got-m.want) <= tol, "%d streams: %s p50 %.3f ms within %.3f ms of %.3f ms", r.streams, m.name, m.got, tol, m.want)
			}
		}
	}
	return miss
}

// rssSlope fits peak RSS growth = fixed + slope × streams over the levels by least squares
// (bytes); ok is false with fewer than two distinct levels.
func rssSlope(rows []row) (fixed, slope float64, ok bool) {
	if len(rows) < 2 {
		return 0, 0, false
	}
	xs := make([]float64, len(rows))
	ys := make([]float64, len(rows))
	for i, r := range rows {
		xs[i] = float64(r.streams)
		ys[i] = r.rssPerStream * float64(r.streams)
	}
	if stat.Variance(xs, nil) == 0 {
		return 0, 0, false
	}
	fixed, slope = stat.LinearRegression(xs, ys, nil, false)
	return fixed, slope, true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cpuModel returns the CPU model name from /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
