package main

// GPU telemetry end to end (DESIGN §3.10): a sweep of the in-process simulator reading a
// DCGM exporter over real loopback HTTP, and a sweep without one.

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
)

// exporterPowerW is the fake exporter's GPU power.
const exporterPowerW = 300

// fakeDCGMExporter serves DCGM exporter text over loopback HTTP for one H100 drawing
// exporterPowerW, whose energy counter integrates that power from the server's start
// (300 W = 0.3 mJ per ms, read at each request).
func fakeDCGMExporter(t *testing.T) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		energyMJ := exporterPowerW * float64(time.Since(start)) / 1e6
		labels := `gpu="0",UUID="GPU-5fd4f087",pci_bus_id="00000000:53:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7"`
		fmt.Fprintf(w, "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{%s} %d\n"+
			"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{%s} %.0f\n"+
			"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{%s} 100\n", labels, exporterPowerW, labels, energyMJ, labels)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// gpuSweepConfig is two short levels of the demo simulator with GPU readings every 50 ms.
const gpuSweepConfig = `name: gpu
workload:
  input_tokens: {dist: fixed, mean: 32}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  levels: [1, 2]
  warmup: 200ms
  duration: 800ms
  min_requests: 10
  max_duration: 1600ms
  retry_excluded: 0
gpu_metrics: {interval: 50ms}
`

// A sweep with --gpu-metrics-url at the fake exporter: the console names it and the GPU; the
// idle reading and every level's window carry the exporter's 300 W, and the window's energy
// from the counter is 300 W × the window within 2% (the counter is read at the exporter, the
// reading timed at the midpoint of the request: under a millisecond of an 800 ms window);
// the readings are in gpu_metrics.jsonl. The URL's token is never shown.
//
// Once the simulator serves DCGM families (simulator.gpus, simulator.power), this test can
// read its /metrics instead of the fake exporter, with J/token derived from idle_w and max_w.
func TestSweepGPUTelemetry(t *testing.T) {
	srv := fakeDCGMExporter(t)
	dir := filepath.Join(t.TempDir(), "run")
	r := runCmd(nil, "sweep", "-c", writeTestConfig(t, gpuSweepConfig), "-o", dir,
		"--gpu-metrics-url", srv.URL+"/metrics?token=hunter2")
	if r.err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", r.err, r.stderr)
	}
	want := "kneecap: GPU telemetry: 1 GPU: 0 NVIDIA H100 80GB HBM3 on node-7, read from " + srv.URL + "/metrics?token=REDACTED"
	if !strings.Contains(r.stderr, want+"\n") || !strings.Contains(r.stderr, "kneecap: GPU idle: 300.0 W") {
		t.Errorf("stderr lacks %q and the idle line:\n%s", want, r.stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.GPUIdle == nil || res.GPUIdle.PowerMeanW != exporterPowerW || res.GPUIdle.Source != record.GPUFromDCGM {
		t.Errorf("gpu_idle %+v, want 300 W from dcgm", res.GPUIdle)
	}
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(res.Levels))
	}
	for _, l := range res.Levels {
		checkLevelGPU(t, l.Run)
	}
	b, err := os.ReadFile(filepath.Join(dir, launch.GPUMetricsFile))
	if err != nil || strings.Count(string(b), "\n") < 10 {
		t.Errorf("%s: %d bytes, %v; want a line per reading", launch.GPUMetricsFile, len(b), err)
	}
	for _, f := range []string{launch.GPUMetricsFile, rundir.LevelsFile, rundir.ConfigFile} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); strings.Contains(string(b), "hunter2") {
			t.Errorf("%s holds the URL's token", f)
		}
	}
	if strings.Contains(r.stderr+r.stdout, "hunter2") {
		t.Error("the console shows the URL's token")
	}
}

// With no GPU source configured, the DCGM families of the server's metrics are read from the
// scrape itself (here the fake exporter stands for a server whose /metrics carries them, as
// the simulator's will with simulator.gpus): the console names them, and every level and the
// idle reading carry the exporter's figures, at the scrape's interval.
func TestSweepGPUFromServerMetrics(t *testing.T) {
	srv := fakeDCGMExporter(t)
	dir := filepath.Join(t.TempDir(), "run")
	cfg := strings.Replace(gpuSweepConfig, "gpu_metrics: {interval: 50ms}", "server_metrics: {interval: 50ms}", 1)
	r := runCmd(nil, "sweep", "-c", writeTestConfig(t, cfg), "-o", dir, "--server-metrics-url", srv.URL+"/metrics")
	if r.err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", r.err, r.stderr)
	}
	want := "kneecap: GPU telemetry: 1 GPU: 0 NVIDIA H100 80GB HBM3 on node-7, from the DCGM families in the server's metrics at " + srv.URL + "/metrics\n"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.GPUIdle == nil || res.GPUIdle.PowerMeanW != exporterPowerW {
		t.Errorf("gpu_idle %+v, want 300 W", res.GPUIdle)
	}
	for _, l := range res.Levels {
		checkLevelGPU(t, l.Run)
	}
}

// checkLevelGPU checks a level's GPU figures against the fake exporter's GPU.
func checkLevelGPU(t *testing.T, run record.LevelRun) {
	t.Helper()
	g := run.GPU
	if g == nil || g.EnergyJ == nil || len(g.GPUs) != 1 {
		t.Fatalf("level %d: gpu %+v, want one GPU with its energy", run.Index+1, g)
	}
	want := exporterPowerW * float64(run.W1-run.W0) / 1e9
	if math.Abs(*g.EnergyJ-want) > 0.02*want || g.EnergySource != record.EnergyFromCounter {
		t.Errorf("level %d: energy %.2f J (%s), want %.2f J from the counter", run.Index+1, *g.EnergyJ, g.EnergySource, want)
	}
	if g.PowerMeanW != exporterPowerW || g.PowerP95W != exporterPowerW || g.Samples < 5 {
		t.Errorf("level %d: power %g W mean, %g W p95 over %d readings; want 300 W", run.Index+1, g.PowerMeanW, g.PowerP95W, g.Samples)
	}
	if g.UtilPct == nil || *g.UtilPct != 100 || g.GPUs[0].Model != "NVIDIA H100 80GB HBM3" || g.GPUs[0].Host != "node-7" {
		t.Errorf("level %d: util %v, GPU %+v", run.Index+1, g.UtilPct, g.GPUs[0].GPU)
	}
}

// A target with no GPU telemetry (the simulator serves no DCGM families) runs as before, with
// one console line saying so and no GPU figures or file.
func TestSweepWithoutGPUTelemetry(t *testing.T) {
	dir, r := sharedFastSweep(t)
	if n := strings.Count(r.stderr, "kneecap: GPU telemetry: none ("); n != 1 || !strings.Contains(r.stderr, "energy figures absent\n") {
		t.Errorf("stderr has %d GPU telemetry lines, want one saying none:\n%s", n, r.stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Levels {
		if l.Run.GPU != nil {
			t.Errorf("level %d has GPU figures %+v", l.Run.Index+1, l.Run.GPU)
		}
	}
	if res.GPUIdle != nil {
		t.Errorf("gpu_idle %+v, want none", res.GPUIdle)
	}
	if _, err := os.Stat(filepath.Join(dir, launch.GPUMetricsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s written without GPU telemetry (%v)", launch.GPUMetricsFile, err)
	}
}
