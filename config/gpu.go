package config

import (
	"slices"

	"github.com/kneecap/kneecap/server"
)

// gpuMetrics checks gpu_metrics: (DESIGN §3.10): its source, its URLs (http(s), or off alone),
// its match expressions and its interval.
func (v *validation) gpuMetrics() {
	g := v.c.GPUMetrics
	switch g.Source {
	case "", server.GPUSourceDCGM, server.GPUSourceNvidiaSMI, server.GPUSourceOff:
	default:
		v.bad("gpu_metrics.source", "%q: must be %s, %s or %s", g.Source, server.GPUSourceDCGM, server.GPUSourceNvidiaSMI, server.GPUSourceOff)
	}
	if slices.Contains(g.URLs, server.GPUSourceOff) && len(g.URLs) > 1 {
		v.bad("gpu_metrics.urls", "off disables GPU telemetry: give it alone, not beside URLs")
	}
	for _, u := range g.URLs {
		if u == server.GPUSourceOff {
			continue
		}
		if err := checkURL(u); err != nil {
			v.bad("gpu_metrics.urls", "%v", err)
		}
	}
	if g.Source == server.GPUSourceNvidiaSMI && len(g.URLs) > 0 && !g.Off() {
		v.bad("gpu_metrics.urls", "nvidia-smi (gpu_metrics.source) reads this machine's GPUs: give URLs or nvidia-smi, not both")
	}
	if _, err := server.CompileGPUMatch(g.Match); err != nil {
		v.bad("gpu_metrics.match", "%v", err)
	}
	if g.Off() {
		v.nonNegative("gpu_metrics.interval", g.Interval)
	} else {
		v.positive("gpu_metrics.interval", g.Interval)
	}
}
