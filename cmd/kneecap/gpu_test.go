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
	// Not parallel: beside three other tests a level's energy came out 2.4% off (281 J for
	// 288 J), the readings late by the machine's load.
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
	b, err := os.ReadFile(filepath.Join(dir, rundir.GPUMetricsFile))
	if err != nil || strings.Count(string(b), "\n") < 10 {
		t.Errorf("%s: %d bytes, %v; want a line per reading", rundir.GPUMetricsFile, len(b), err)
	}
	for _, f := range []string{rundir.GPUMetricsFile, rundir.LevelsFile, rundir.ConfigFile} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); strings.Contains(string(b), "hunter2") {
			t.Errorf("%s holds the URL's token", f)
		}
	}
	if strings.Contains(r.stderr+r.stdout, "hunter2") {
		t.Error("the console shows the URL's token")
	}
}

// energySweepConfig is issue 24's acceptance sweep, shortened: the demo engine (S = 32 slots)
// with one simulated GPU of idle 120 W and max 700 W, five levels around its energy optimum
// (about concurrency 10: J(c) ∝ (120 + 580·c/32)(4 ms + 0.25 ms·c)/c, lowest at c ≈ 10.3)
// and the server's metrics, which carry the GPU's DCGM families, read every 50 ms.
const energySweepConfig = `name: energy
simulator: {profile: demo, gpus: 1, power: {idle_w: 120, max_w: 700}}
workload:
  input_tokens: {dist: fixed, mean: 32}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  levels: [1, 2, 4, 8, 16]
  warmup: 200ms
  duration: 800ms
  min_requests: 10
  max_duration: 1600ms
  client_tolerance: 0.05
  retry_excluded: 0
server_metrics: {interval: 50ms}
`

// TestSweepEnergy is issue 24's acceptance on the simulator (DESIGN §3.10, §4.16, §6): with no
// GPU source configured the DCGM families of the simulator's own /metrics are read (the
// console names them); the idle reading is the idle power; each valid level's J per output
// token is within 3% of the simulator's power model evaluated at the level's measured running
// count (the window's mean of vllm:num_requests_running, scraped with the same families) and
// its output TPS, gpus × sim.Config.GPUPowerW(running) ÷ TPS (the model is linear in the
// running count, so a window's mean power is the model at its mean; the 3% holds the sampled
// mean's error); the energy optimum is reported with its interval, and the efficiency chart
// is written.
func TestSweepEnergy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	r := runCmd(nil, "sweep", "-c", writeTestConfig(t, energySweepConfig), "-o", dir)
	if r.err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stderr, "kneecap: GPU telemetry: 1 GPU: 0 NVIDIA H100 80GB HBM3 on kneecap-sim, from the DCGM families in the server's metrics at ") {
		t.Errorf("stderr does not name the simulator's GPU:\n%s", r.stderr)
	}
	run, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	model := run.Config.Simulator
	if idle := run.GPUIdle; idle == nil || idle.PowerMeanW != model.Power.IdleW || idle.Samples < 3 {
		t.Errorf("gpu_idle %+v, want %g W over at least 3 readings", idle, model.Power.IdleW)
	}
	res, _, err := rundir.ReadAnalysis(filepath.Join(dir, "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var misses []string
	checked := 0
	for i, lv := range res.Levels {
		lr := run.Levels[i].Run
		if !lv.Valid || lv.GPU == nil || lr.Server == nil {
			t.Logf("level %d: valid %v, gpu %v, server %v: not checked", lv.Concurrency, lv.Valid, lv.GPU != nil, lr.Server != nil)
			continue
		}
		want := model.GPUPowerW(lr.Server.MeanRunning) / float64(lv.OutputTPS)
		if got := float64(lv.GPU.JPerOutputToken); math.Abs(got/want-1) > 0.03 {
			misses = append(misses, fmt.Sprintf("level %d: %.4f J per output token, want %.4f (±3%%) at mean running %.2f and %.0f tokens/s",
				lv.Concurrency, got, want, lr.Server.MeanRunning, float64(lv.OutputTPS)))
		}
		checked++
	}
	if checked < 3 {
		misses = append(misses, fmt.Sprintf("%d levels checked, want at least 3", checked))
	}
	e := res.Energy
	switch {
	case e == nil || !e.Optimal.X.OK() || !e.IdleW.OK():
		t.Fatalf("energy %+v: want the optimum and the idle power", e)
	case e.Optimal.Interval == nil:
		misses = append(misses, "the energy optimum has no interval")
	case !(e.Optimal.Interval[0] <= e.Optimal.X && e.Optimal.X <= e.Optimal.Interval[1]):
		misses = append(misses, fmt.Sprintf("optimum %v outside its interval %v", e.Optimal.X, *e.Optimal.Interval))
	}
	// The engine is exact: a miss the client self-check explains (levels excluded or kept as
	// imprecise on a starved client, which also leaves too few for the interval; a busy
	// machine that thins the running count's samples) is inconclusive, not a failure.
	if why := starved(readJSON(t, filepath.Join(dir, "analysis.json"))); len(misses) > 0 && why != "" {
		t.Skipf("inconclusive, %s: %s", why, strings.Join(misses, "; "))
	}
	for _, m := range misses {
		t.Error(m)
	}
	for _, f := range []string{"efficiency.png", "efficiency.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v (missing or empty)", f, err)
		}
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
	if _, err := os.Stat(filepath.Join(dir, rundir.GPUMetricsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s written without GPU telemetry (%v)", rundir.GPUMetricsFile, err)
	}
}
