package server

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// vllmPrefixText is vLLM V1's prefix-cache counters as prometheus_client exposes them (the
// TYPE line names the family, the samples carry _total; vllm/v1/metrics/loggers.py), on two
// engines.
const vllmPrefixText = `# HELP vllm:prefix_cache_queries Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="llama"} %g
vllm:prefix_cache_queries_total{engine="1",model_name="llama"} 0
# HELP vllm:prefix_cache_hits Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="llama"} %g
vllm:prefix_cache_hits_total{engine="1",model_name="llama"} 0
`

// TestPrefixCacheRateFromCounters: the window's rate is the hits' increase ÷ the queries'
// from the last sample before the window to the last in it (samples 1 … 3 of 0 … 4: queries
// 1000 → 4000, hits 100 → 1600, so 1500 ÷ 3000 = 0.5), a counter reset counted from 0, and
// a window without queries is not measured.
func TestPrefixCacheRateFromCounters(t *testing.T) {
	parse := func(ts int64, queries, hits float64) MetricSample {
		m, err := parseMetrics(strings.NewReader(fmt.Sprintf(vllmPrefixText, queries, hits)))
		if err != nil {
			t.Fatal(err)
		}
		m.TUnixNS = ts
		return m
	}
	samples := []MetricSample{parse(0, 500, 0), parse(1, 1000, 100), parse(2, 2000, 600), parse(3, 4000, 1600), parse(4, 9000, 9000)}
	st := SummarizeSamples(samples, 2, 4)
	rate, ok := st.PrefixCacheRate()
	if !ok || rate != 0.5 || st.PrefixCacheSource != record.PrefixFromCounters || st.PrefixCacheQueries != 3000 || st.PrefixCacheHits != 1500 || !st.Exposes(record.MetricPrefixCache) {
		t.Fatalf("stats %+v: want rate 0.5 of 3000 queries from counters", st)
	}
	// A restarted server: 4000 → 800 queries counts 800, 1600 → 200 hits counts 200.
	reset := append(samples[:4:4], parse(5, 800, 200))
	if st := SummarizeSamples(reset, 4, 6); func() bool { r, ok := st.PrefixCacheRate(); return !ok || r != 0.25 }() {
		t.Errorf("after a reset: %+v, want 200 ÷ 800", st)
	}
	// A measured 0 (queries, no hits) stays in levels.json; an older file that left it out
	// (its source set) still reads 0.
	zero := SummarizeSamples([]MetricSample{parse(0, 100, 50), parse(1, 900, 50)}, 1, 2)
	if b, err := json.Marshal(zero); err != nil || !strings.Contains(string(b), `"prefix_cache_hit_rate":0,"prefix_cache_source":"counters"`) {
		t.Errorf("a measured 0: %s (%v)", b, err)
	}
	var old record.ServerStats
	if err := json.Unmarshal([]byte(`{"samples":2,"prefix_cache_source":"counters","prefix_cache_queries":800}`), &old); err != nil {
		t.Fatal(err)
	}
	if r, ok := old.PrefixCacheRate(); !ok || r != 0 {
		t.Errorf("an older levels.json's measured 0: %v %v", r, ok)
	}
	// No query in the window: the rate is not measured (never a 0).
	idle := []MetricSample{parse(0, 100, 50), parse(1, 100, 50)}
	if st := SummarizeSamples(idle, 1, 2); func() bool { _, ok := st.PrefixCacheRate(); return ok }() {
		t.Errorf("an idle window: %+v", st)
	}
	// Without the families: not exposed, not measured.
	m, err := parseMetrics(strings.NewReader(sglangText))
	if err != nil {
		t.Fatal(err)
	}
	if st := SummarizeSamples([]MetricSample{m}, 0, 1); st.Exposes(record.MetricPrefixCache) || st.PrefixCacheSource != "" {
		t.Errorf("SGLang without its cache gauge: %+v", st)
	}
}

// TestPrefixCacheRateFromGauges: vLLM V0's vllm:gpu_prefix_cache_hit_rate and SGLang's
// sglang:cache_hit_rate (docs/references/production_metrics.md of SGLang) are averaged over
// the window's samples.
func TestPrefixCacheRateFromGauges(t *testing.T) {
	for _, tc := range []struct{ name, family string }{
		{"vllm v0", "vllm:gpu_prefix_cache_hit_rate"},
		{"sglang", "sglang:cache_hit_rate"},
	} {
		var samples []MetricSample
		for i, v := range []float64{0.9, 0.2, 0.6} {
			text := fmt.Sprintf("# HELP %s The cache hit rate\n# TYPE %s gauge\n%s{model_name=\"m\"} %g\n", tc.family, tc.family, tc.family, v)
			m, err := parseMetrics(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			m.TUnixNS = int64(i)
			samples = append(samples, m)
		}
		st := SummarizeSamples(samples, 1, 3) // the samples 0.2 and 0.6
		if rate, ok := st.PrefixCacheRate(); !ok || math.Abs(rate-0.4) > 1e-12 || st.PrefixCacheSource != record.PrefixFromGauge || !st.Exposes(record.MetricPrefixCache) {
			t.Errorf("%s: %+v, want the mean 0.4 of the gauge", tc.name, st)
		}
	}
}
