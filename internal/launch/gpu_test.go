package launch

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/server"
)

// dcgmLine is one GPU's power in the DCGM exporter's format.
const dcgmLine = `DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-x",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7"} 120` + "\n"

// findGPU over loopback HTTP: the line it prints and the sampler it leaves for each
// configuration. The simulator's target (stopSim set) is not probed at :9400.
func TestFindGPU(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/dcgm", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(dcgmLine)) })
	mux.HandleFunc("/vllm", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("vllm:num_requests_running 1\n")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		gpu    server.GPUMetricsConfig
		scrape string
		want   string
		fed    bool
		none   bool
	}{
		{"off", server.GPUMetricsConfig{URLs: []string{"off"}}, srv.URL + "/dcgm", "GPU telemetry: none (gpu_metrics off): energy figures absent", false, true},
		{"server's metrics", server.GPUMetricsConfig{}, srv.URL + "/dcgm", "1 GPU: 0 NVIDIA H100 80GB HBM3 on node-7, from the DCGM families in the server's metrics at " + srv.URL + "/dcgm", true, false},
		{"none", server.GPUMetricsConfig{}, srv.URL + "/vllm", "GPU telemetry: none (no DCGM families in the server's metrics; --gpu-metrics-url URL or --gpu-metrics nvidia-smi): energy figures absent", false, true},
		{"url", server.GPUMetricsConfig{URLs: []string{srv.URL + "/dcgm"}}, "", "1 GPU: 0 NVIDIA H100 80GB HBM3 on node-7, read from " + srv.URL + "/dcgm", false, false},
		{"url not matching", server.GPUMetricsConfig{URLs: []string{srv.URL + "/dcgm"}, Match: map[string]string{"Hostname": "node-8"}}, "",
			"GPU telemetry: none (" + srv.URL + "/dcgm lists no GPU matching gpu_metrics.match)", false, true},
		{"url not answering", server.GPUMetricsConfig{URLs: []string{srv.URL + "/missing"}}, "", "warning: GPU telemetry: " + srv.URL + "/missing did not answer", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			s := &Sweep{Env: Env{Log: &log}, Cfg: config.Default()}
			s.Cfg.GPUMetrics = tc.gpu
			tg := &Target{Endpoint: "http://127.0.0.1:1/v1", scrape: server.ServerMetricsConfig{URL: tc.scrape}, stopSim: func() error { return nil }}
			if err := s.findGPU(context.Background(), tg); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), tc.want) || strings.Count(log.String(), "\n") != 1 {
				t.Errorf("log %q, want one line with %q", log.String(), tc.want)
			}
			if (tg.gpu == nil) != tc.none || tg.gpuFed != tc.fed {
				t.Errorf("sampler %v fed %v, want none %v fed %v", tg.gpu, tg.gpuFed, tc.none, tc.fed)
			}
		})
	}
}

// The idle reading is not taken again on a resumed run that has one, nor on a shard other
// than 0, nor on shard 0 when the first level starts too soon (the Sweep has no results
// directory here: reaching it would panic). The bound is 5 intervals + 2 s: 7 s at 1 s.
func TestIdleGPUSkipped(t *testing.T) {
	g, err := server.NewGPUSampler(server.GPUSamplerOptions{Fed: "http://x/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    Sweep
		want string
	}{
		{"resumed", Sweep{done: &rundir.Run{GPUIdle: &record.GPUStats{}}}, ""},
		{"shard 1", Sweep{Cfg: config.Config{Shard: config.ShardConfig{Index: 1, Count: 2}}}, ""},
		{"shard 0 too soon", Sweep{Cfg: config.Config{Shard: config.ShardConfig{Index: 0, Count: 2, StartAt: "2020-01-01T00:00:00Z"}}},
			"no idle reading (the first level starts in less than 7s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			tc.s.Log = &log
			tc.s.idleGPU(context.Background(), g)
			if tc.want == "" && log.Len() > 0 || !strings.Contains(log.String(), tc.want) {
				t.Errorf("log %q, want %q", log.String(), tc.want)
			}
		})
	}
}
