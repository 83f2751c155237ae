package launch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
)

// TestMaxTokensPerChunk: usage is checked against 4 × the tokens per chunk the configuration
// declares, else the server's info (the first a resumed run recorded), else the default
// (record.DefaultTokensPerChunk); a shard of a sharded sweep does not use the info (only shard
// 0 reads it), so every shard has one bound.
func TestMaxTokensPerChunk(t *testing.T) {
	sglang := &record.ServerInfo{Engine: "SGLang", Settings: map[string]string{"stream_interval": "2"}}
	resumed := &rundir.Run{Server: &record.ServerInfo{Engine: "SGLang", Settings: map[string]string{"stream_interval": "3"}}}
	for _, tc := range []struct {
		declared, shards int
		info             *record.ServerInfo
		done             *rundir.Run
		want             int
	}{
		{0, 0, sglang, nil, 8},
		{5, 0, sglang, nil, 20},
		{0, 0, sglang, resumed, 12},
		{0, 0, nil, nil, record.DefaultTokensPerChunk},
		{0, 2, sglang, nil, record.DefaultTokensPerChunk},
		{5, 2, sglang, nil, 20},
	} {
		var cfg config.Config
		cfg.Target.TokensPerChunk, cfg.Shard.Count = tc.declared, tc.shards
		if got := maxTokensPerChunk(cfg, tc.info, tc.done); got != tc.want {
			t.Errorf("maxTokensPerChunk(%d, %d shards, %v, %v) = %d, want %d", tc.declared, tc.shards, tc.info, tc.done, got, tc.want)
		}
	}
}

func TestDefaultMetricsURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000/v1":          "http://127.0.0.1:8000/metrics",
		"https://user:key@gpu.example/v1?x": "https://gpu.example/metrics",
		"not a url":                         "",
	} {
		if got := defaultMetricsURL(in); got != want {
			t.Errorf("defaultMetricsURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// The probe takes /metrics only when it answers 200 with Prometheus text.
func TestProbeMetrics(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/prom", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# HELP vllm:num_requests_running Running.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"))
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hello</html>")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]bool{"/prom": true, "/html": false, "/missing": false} {
		if got := probeMetrics(context.Background(), srv.Client(), srv.URL+path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

func TestExporterURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8000/v1":          "http://127.0.0.1:9400/metrics",
		"https://user:key@gpu.example/v1?x": "http://gpu.example:9400/metrics",
		"http://[::1]:8000/v1":              "http://[::1]:9400/metrics",
		"not a url":                         "",
	} {
		if got := exporterURL(in); got != want {
			t.Errorf("exporterURL(%q) = %q, want %q", in, got, want)
		}
	}
}
