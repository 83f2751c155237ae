package record

import "slices"

// The server's quantities (DESIGN §3.7): which metric families measure each, so that a
// level's ServerStats says which it exposed, and the prefix-cache hit rate it measured.

// Server metric families the Scraper keeps, by engine. For each quantity the first family
// present in a scrape is used; values are summed across label sets (models, engines, ranks).
// A counter's samples may appear under the family name or with a "_total" suffix.
var (
	RunningSeries = []string{"vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing"}
	WaitingSeries = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred"}
	// KV-cache usage as a fraction in [0, 1] (vLLM's *_perc gauges are fractions too).
	KVSeries         = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio"}
	PreemptionSeries = []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}
)

// MetricQuantity is a quantity of the server metrics, measured by one of several families
// depending on the engine (DESIGN §3.7).
type MetricQuantity int

// The quantities the Scraper keeps.
const (
	MetricRunning MetricQuantity = iota
	MetricWaiting
	MetricKVUsage
	MetricPreemptions
	// MetricPrefixCache is the prefix-cache hit rate: hit and query counters (vLLM V1) or a
	// hit-rate gauge (vLLM V0, SGLang).
	MetricPrefixCache
)

// Series returns the families that measure q, in order of preference.
func (q MetricQuantity) Series() []string {
	switch q {
	case MetricRunning:
		return RunningSeries
	case MetricWaiting:
		return WaitingSeries
	case MetricKVUsage:
		return KVSeries
	case MetricPreemptions:
		return PreemptionSeries
	case MetricPrefixCache:
		return prefixCacheSeries()
	}
	return nil
}

// Exposes reports whether the server exposed quantity q in the window: one of its families
// is among s.Series. A quantity it does not expose reads 0 in s and is "not measured" (null)
// in the analysis, never 0.
func (s *ServerStats) Exposes(q MetricQuantity) bool {
	if s == nil {
		return false
	}
	for _, n := range s.Series {
		if slices.Contains(q.Series(), n) {
			return true
		}
	}
	return false
}

// Prefix-cache families (DESIGN §3.7), in order of preference. vLLM V1 counts, in tokens,
// the prompt tokens its prefix cache was asked for and those it had (vllm/v1/metrics/
// loggers.py: Counter vllm:prefix_cache_queries and vllm:prefix_cache_hits, exposed with
// "_total"; vllm:gpu_prefix_cache_* before they were renamed). vLLM V0 exposes a hit-rate gauge
// (vllm:gpu_prefix_cache_hit_rate), SGLang one too (sglang:cache_hit_rate, python/sglang/srt/
// metrics/collector.py). llama.cpp's /metrics has no prefix-cache series.
var (
	PrefixHitSeries   = []string{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits"}
	PrefixQuerySeries = []string{"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries"}
	PrefixRateSeries  = []string{"vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"}
)

// prefixCacheSeries returns every family that measures the prefix-cache hit rate.
func prefixCacheSeries() []string {
	return slices.Concat(PrefixHitSeries, PrefixQuerySeries, PrefixRateSeries)
}

// PrefixCacheRate returns the prefix-cache hit rate of the window in [0, 1] and whether it
// was measured: the server exposed a prefix-cache family and, for counters, was queried in
// the window (PrefixCacheQueries > 0) or, for a gauge, sampled in it.
func (s *ServerStats) PrefixCacheRate() (float64, bool) {
	if s == nil || s.PrefixCacheSource == "" {
		return 0, false
	}
	if s.PrefixCacheHitRate == nil { // an older levels.json left a measured 0 out
		return 0, true
	}
	return *s.PrefixCacheHitRate, true
}

// Sources of ServerStats.PrefixCacheSource.
const (
	// PrefixFromCounters: the increase of the hit counter ÷ that of the query counter.
	PrefixFromCounters = "counters"
	// PrefixFromGauge: the mean of the hit-rate gauge over the window's samples. A gauge
	// does not measure the window: vLLM V0's gpu_prefix_cache_hit_rate is a lifetime rate
	// updated in buckets of 1000 queries, SGLang's cache_hit_rate the last prefill batch's
	// (DESIGN §3.7).
	PrefixFromGauge = "gauge"
)
