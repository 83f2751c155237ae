package sweep

import "slices"

// Prefix-cache families (DESIGN §3.7), in order of preference. vLLM V1 counts, in tokens,
// the prompt tokens its prefix cache was asked for and those it had (vllm/v1/metrics/
// loggers.py: Counter vllm:prefix_cache_queries and vllm:prefix_cache_hits, exposed with
// "_total"; vllm:gpu_prefix_cache_* before they were renamed). vLLM V0 exposes a hit-rate gauge
// (vllm:gpu_prefix_cache_hit_rate), SGLang one too (sglang:cache_hit_rate, python/sglang/srt/
// metrics/collector.py). llama.cpp's /metrics has no prefix-cache series.
var (
	prefixHitSeries   = []string{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits"}
	prefixQuerySeries = []string{"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries"}
	prefixRateSeries  = []string{"vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"}
)

// prefixCacheSeries returns every family that measures the prefix-cache hit rate.
func prefixCacheSeries() []string {
	return slices.Concat(prefixHitSeries, prefixQuerySeries, prefixRateSeries)
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

// counterIncrease is the increase of a cumulative counter over a window: from the last
// sample before it (else the first in it) to the last in it, a decrease counted as a reset
// to 0 (a restarted server).
type counterIncrease struct {
	base, prev *float64
	increase   float64
	seen       bool
}

// before notes v, a sample before the window.
func (c *counterIncrease) before(v *float64) {
	if v != nil {
		c.base = v
	}
}

// in adds v, a sample in the window.
func (c *counterIncrease) in(v *float64) {
	if v == nil {
		return
	}
	c.seen = true
	if c.prev == nil {
		c.prev = c.base
	}
	if c.prev != nil {
		if *v >= *c.prev {
			c.increase += *v - *c.prev
		} else {
			c.increase += *v // counter reset
		}
	}
	c.prev = v
}

// prefixWindow gathers a window's prefix-cache samples.
type prefixWindow struct {
	hits, queries counterIncrease
	rateSum       float64
	rateN         int
}

func (p *prefixWindow) before(m *MetricSample) {
	p.hits.before(m.PrefixCacheHits)
	p.queries.before(m.PrefixCacheQueries)
}

func (p *prefixWindow) in(m *MetricSample) {
	p.hits.in(m.PrefixCacheHits)
	p.queries.in(m.PrefixCacheQueries)
	if r := m.PrefixCacheHitRate; r != nil {
		p.rateSum += *r
		p.rateN++
	}
}

// set stores the window's hit rate in st: the counters' when the server was queried in the
// window, else the gauge's mean.
func (p *prefixWindow) set(st *ServerStats) {
	if p.hits.seen && p.queries.seen {
		st.PrefixCacheHits, st.PrefixCacheQueries = p.hits.increase, p.queries.increase
		if q := p.queries.increase; q > 0 {
			r := min(1, p.hits.increase/q)
			st.PrefixCacheHitRate = &r
			st.PrefixCacheSource = PrefixFromCounters
			return
		}
	}
	if p.rateN > 0 {
		r := p.rateSum / float64(p.rateN)
		st.PrefixCacheHitRate = &r
		st.PrefixCacheSource = PrefixFromGauge
	}
}
