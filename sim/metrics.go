package sim

import (
	"bytes"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// metricsContentType is the Prometheus text exposition format 0.0.4.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// metrics serves the vLLM-named series in Prometheus text format, each labelled
// model_name="<model>" as vLLM does, then, with GPUs, the DCGM exporter's families of the
// simulated GPUs (gpuFamilies).
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	st := s.Stats()
	label := []*dto.LabelPair{{Name: ptr("model_name"), Value: ptr(s.cfg.Model)}}
	gauge := func(name, help string, v float64) *dto.MetricFamily {
		return &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: label, Gauge: &dto.Gauge{Value: ptr(v)}}}}
	}
	counter := func(name, help string, v int64) *dto.MetricFamily {
		return &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Label: label, Counter: &dto.Counter{Value: ptr(float64(v))}}}}
	}
	fams := []*dto.MetricFamily{
		gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(st.Running)),
		gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(st.Waiting)),
	}
	if st.KVCacheTokens > 0 {
		// An unlimited cache has no usage to report: the series is absent (the reports then
		// say "—"), as a server that does not expose it.
		fams = append(fams,
			gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", st.KVUsage()),
			gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage (pre-v1 name).", st.KVUsage()))
	}
	fams = append(fams,
		counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.", st.Preemptions),
		counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", st.PromptTokens),
		counter("vllm:generation_tokens_total", "Number of generation tokens processed.", st.GenerationTokens),
		counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", st.PrefixQueryTokens),
		counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", st.PrefixHitTokens),
	)
	if s.cfg.GPUs > 0 {
		fams = append(fams, s.gpuFamilies()...)
	}
	var buf bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			http.Error(w, "sim: metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", metricsContentType)
	_, _ = w.Write(buf.Bytes())
}

func ptr[T any](v T) *T { return &v }
