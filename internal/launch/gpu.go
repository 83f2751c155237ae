package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sweep"
)

// GPU telemetry (DESIGN §3.10): which source is read, found once at launch; the sampler
// started for the sweep with its readings in gpu_metrics.jsonl; the idle reading before the
// first level.

const (
	// gpuProbeTimeout bounds the launch's read of a configured source (nvidia-smi, a URL
	// given) and of the server's metrics; exporterProbeTimeout the try of the exporter's
	// default port at the target's host.
	gpuProbeTimeout      = 5 * time.Second
	exporterProbeTimeout = time.Second
	// exporterPort is the DCGM exporter's default listening port (DCGM_EXPORTER_LISTEN :9400).
	exporterPort = "9400"
	// idleReadings is how many readings the idle reading spans: three intervals, 3 s at the
	// default interval, so that its window [first, last) holds the three readings the
	// analysis needs of any window's GPU figures (analysis' minGPUSamples).
	idleReadings = 4
)

// findGPU finds the GPU telemetry of gpu_metrics (t.gpu, nil for none) and says in one line
// which GPUs are counted and where they are read (the URL last: the console's redaction of a
// query runs to the next space), or that there is none. nvidia-smi asked for and not
// on the PATH is exit 2; a configured source that does not answer now is warned about and
// sampled anyway.
func (s *Sweep) findGPU(ctx context.Context, t *Target) error {
	g := s.Cfg.GPUMetrics
	if g.Off() {
		fmt.Fprintln(s.Log, "kneecap: GPU telemetry: none (gpu_metrics off): energy figures absent")
		return nil
	}
	match, err := server.CompileGPUMatch(g.Match)
	if err != nil {
		return exit.Usagef("sweep: %w", err)
	}
	opts := server.GPUSamplerOptions{Match: match, Interval: g.Interval}
	switch {
	case g.Source == server.GPUSourceNvidiaSMI:
		if _, err := exec.LookPath(server.GPUSourceNvidiaSMI); err != nil {
			return exit.Usagef("sweep: gpu_metrics.source nvidia-smi (--gpu-metrics): %v", err)
		}
		opts.NvidiaSMI = true
	case len(g.URLs) > 0:
		opts.URLs = g.URLs
	default:
		return s.findDCGM(ctx, t, opts)
	}
	sampler, err := server.NewGPUSampler(opts)
	if err != nil {
		return exit.Usagef("sweep: %w", err)
	}
	gpus, err := probeGPUs(ctx, sampler, gpuProbeTimeout)
	switch {
	case err != nil:
		fmt.Fprintf(s.Log, "kneecap: warning: GPU telemetry: %s did not answer (%v): sampling it anyway, energy figures absent until it does\n", sampler.From(), err)
	case len(gpus) == 0:
		fmt.Fprintf(s.Log, "kneecap: GPU telemetry: none (%s lists no GPU%s): energy figures absent\n", sampler.From(), matchNote(g.Match))
		return nil
	default:
		fmt.Fprintf(s.Log, "kneecap: GPU telemetry: %s, read from %s\n", server.DescribeGPUs(gpus), sampler.From())
	}
	t.gpu = sampler
	return nil
}

// findDCGM finds the DCGM families where no source is configured: in the server's metrics
// scrape (the sampler is then fed by the scrape), else at the exporter's default port on the
// target's host (not for the in-process simulator, whose host is this machine).
func (s *Sweep) findDCGM(ctx context.Context, t *Target, opts server.GPUSamplerOptions) error {
	var tried []string
	if u := t.scrape.URL; u != "" && u != metricsOff {
		probe, err := server.NewGPUSampler(server.GPUSamplerOptions{URLs: []string{u}, Match: opts.Match})
		if err != nil {
			return exit.Usagef("sweep: %w", err)
		}
		if gpus, err := probeGPUs(ctx, probe, gpuProbeTimeout); err == nil && len(gpus) > 0 {
			opts.Fed, opts.Interval = u, t.scrape.Interval
			if t.gpu, err = server.NewGPUSampler(opts); err != nil {
				return exit.Usagef("sweep: %w", err)
			}
			t.gpuFed = true
			fmt.Fprintf(s.Log, "kneecap: GPU telemetry: %s, from the DCGM families in the server's metrics at %s\n", server.DescribeGPUs(gpus), redact.URL(u))
			return nil
		}
		tried = append(tried, "no DCGM families in the server's metrics")
	}
	if u := exporterURL(t.Endpoint); u != "" && t.stopSim == nil {
		opts.URLs = []string{u}
		sampler, err := server.NewGPUSampler(opts)
		if err != nil {
			return exit.Usagef("sweep: %w", err)
		}
		if gpus, err := probeGPUs(ctx, sampler, exporterProbeTimeout); err == nil && len(gpus) > 0 {
			t.gpu = sampler
			fmt.Fprintf(s.Log, "kneecap: GPU telemetry: %s, from the DCGM exporter at %s (found at the target's host; --gpu-metrics-url off to disable)\n", server.DescribeGPUs(gpus), u)
			return nil
		}
		tried = append(tried, "no DCGM exporter at "+u)
	}
	fmt.Fprintf(s.Log, "kneecap: GPU telemetry: none (%s%s; --gpu-metrics-url URL or --gpu-metrics nvidia-smi): energy figures absent\n",
		strings.Join(tried, ", "), matchNote(s.Cfg.GPUMetrics.Match))
	return nil
}

// probeGPUs reads the sampler's sources once within timeout: the GPUs counted.
func probeGPUs(ctx context.Context, g *server.GPUSampler, timeout time.Duration) ([]server.GPUValue, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return g.Probe(ctx)
}

// matchNote is " matching gpu_metrics.match" when a match is configured.
func matchNote(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	return " matching gpu_metrics.match"
}

// exporterURL is the DCGM exporter's default endpoint at the endpoint's host,
// http://HOST:9400/metrics; "" for a URL that does not parse.
func exporterURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(u.Hostname(), exporterPort), Path: "/metrics"}).String()
}

// StartTelemetry starts what the sweep reads beside its requests for the whole sweep: the
// server's metrics (Target.startScraper) and the GPU telemetry (startGPU). stop ends both and
// returns their errors, each named ("server metrics: …", "GPU telemetry: …"), one a line.
func (s *Sweep) StartTelemetry(ctx context.Context, t *Target, plan *sweep.Plan) (stop func() error, err error) {
	stopScraper, err := t.startScraper(ctx, s.Dir, plan)
	if err != nil {
		return nil, err
	}
	stopGPU, err := s.startGPU(ctx, t, plan)
	if err != nil {
		_ = stopScraper()
		return nil, err
	}
	return func() error {
		var errs []error
		if err := stopScraper(); err != nil {
			errs = append(errs, fmt.Errorf("server metrics: %w", err))
		}
		if err := stopGPU(); err != nil {
			errs = append(errs, fmt.Errorf("GPU telemetry: %w", err))
		}
		return errors.Join(errs...)
	}, nil
}

// startGPU starts the GPU telemetry findGPU found for the whole sweep: each reading is
// appended to the results directory's gpu_metrics.jsonl as it is taken, plan summarises them
// per level window (LevelRun.GPU), and the idle reading is taken now (idleGPU). stop ends it
// and reports failed reads and write errors; without GPU telemetry it does nothing.
func (s *Sweep) startGPU(ctx context.Context, t *Target, plan *sweep.Plan) (stop func() error, err error) {
	g := t.gpu
	if g == nil {
		return func() error { return nil }, nil
	}
	path := filepath.Join(s.Dir.Path(), rundir.GPUMetricsFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", s.Dir.Path(), err)
	}
	g.Record(f)
	if t.gpuFed && t.scraper != nil {
		t.scraper.FeedGPU(g)
	}
	end := g.Start(ctx)
	plan.GPU = g
	s.idleGPU(ctx, g)
	return func() error {
		err := end()
		if serr := f.Sync(); serr != nil {
			err = errors.Join(err, fmt.Errorf("results %s: %w", path, serr))
		}
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("results %s: %w", path, cerr))
		}
		return err
	}, nil
}

// idleGPU takes the idle reading before the first level, idleReadings readings while nothing
// is sent (bounded), and records it in levels.json. A resumed run keeps the one it has. On a
// sharded sweep only shard 0 takes it (the merge keeps shard 0's), and only when the first
// level starts late enough.
func (s *Sweep) idleGPU(ctx context.Context, g *server.GPUSampler) {
	if s.done != nil && s.done.GPUIdle != nil {
		return
	}
	bound := time.Duration(idleReadings+1)*g.Interval() + 2*time.Second
	if sh := s.Cfg.Shard; sh.Sharded() {
		if sh.Index != 0 {
			return
		}
		if start, err := sh.Start(); err != nil || time.Until(start) < bound {
			fmt.Fprintf(s.Log, "kneecap: GPU telemetry: no idle reading (the first level starts in less than %s): above-idle energy absent\n", bound)
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	idle := g.Idle(ctx, idleReadings)
	if idle == nil {
		fmt.Fprintf(s.Log, "kneecap: warning: GPU telemetry: no idle reading (fewer than 2 readings in %s): above-idle energy absent\n", bound)
		return
	}
	s.Dir.SetGPUIdle(idle)
	fmt.Fprintf(s.Log, "kneecap: GPU idle: %s\n", idleLine(idle))
}

// idleLine describes the idle reading: "118.0 W (mean of 3 readings), 354.0 J (counter)".
func idleLine(st *record.GPUStats) string {
	line := fmt.Sprintf("%.1f W (mean of %d readings)", st.PowerMeanW, st.Samples)
	if st.EnergyJ != nil {
		line += fmt.Sprintf(", %.1f J (%s)", *st.EnergyJ, st.EnergySource)
	}
	return line
}
