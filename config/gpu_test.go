package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/server"
)

// gpu_metrics: its problems named by key, its URLs' credentials redacted and kept secret.
func TestGPUMetricsConfig(t *testing.T) {
	for _, tc := range []struct {
		g    server.GPUMetricsConfig
		want string // "" when valid
	}{
		{server.GPUMetricsConfig{Interval: time.Second}, ""},
		{server.GPUMetricsConfig{URLs: []string{"off"}}, ""},
		{server.GPUMetricsConfig{Source: "nvidia-smi", Interval: time.Second, Match: map[string]string{"gpu": "0|1"}}, ""},
		{server.GPUMetricsConfig{URLs: []string{"off", "http://a:9400/metrics"}, Interval: time.Second}, "gpu_metrics.urls: off disables"},
		{server.GPUMetricsConfig{URLs: []string{"a:9400"}, Interval: time.Second}, "gpu_metrics.urls: "},
		{server.GPUMetricsConfig{Source: "amd", Interval: time.Second}, "gpu_metrics.source: \"amd\""},
		{server.GPUMetricsConfig{Match: map[string]string{"gpu": "("}, Interval: time.Second}, "gpu_metrics.match: "},
		{server.GPUMetricsConfig{}, "gpu_metrics.interval: is 0s: must be > 0"},
	} {
		c := Default()
		c.GPUMetrics = tc.g
		err := c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.g, err, tc.want)
		}
	}
	c := Default()
	c.GPUMetrics.URLs = []string{"http://dcgm:s3cret@node-7:9400/metrics?token=t0k"}
	if r := c.Redacted(); strings.Contains(r.GPUMetrics.URLs[0], "s3cret") || strings.Contains(r.GPUMetrics.URLs[0], "t0k") ||
		c.GPUMetrics.URLs[0] != "http://dcgm:s3cret@node-7:9400/metrics?token=t0k" {
		t.Errorf("redacted %q (the original %q must stay)", r.GPUMetrics.URLs, c.GPUMetrics.URLs)
	}
	if s := c.Secrets(); !slices.Contains(s, "s3cret") || !slices.Contains(s, "t0k") {
		t.Errorf("secrets %q lack the GPU URL's password and token", s)
	}
}
