package analysis

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestSummarizePrefixCache: the usage rate is Σ cached ÷ Σ prompt over the successful
// requests completed in the window that reported cached tokens (here 256 + 0 of 512 + 512:
// the request completed before the window, the one without cached_tokens and the failed one
// are left out); the server's counters, when scraped, win over it, and it over a gauge;
// none leaves it absent.
func TestSummarizePrefixCache(t *testing.T) {
	run := record.LevelRun{Index: 0, Concurrency: 1, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
	rec := func(sent int64, cached *int, status record.Status) record.Record {
		return record.Record{Phase: record.PhaseMeasure, Sent: sent, TTFT: 100 * time.Millisecond, E2E: time.Second,
			Chunks: us(0.1, 2), OutputTokens: 2, PromptTokens: 512, Status: status, CachedTokens: cached}
	}
	n := func(v int) *int { return &v }
	recs := []record.Record{
		rec(11*sec, n(256), record.StatusOK), rec(12*sec, n(0), record.StatusOK), rec(13*sec, nil, record.StatusOK),
		rec(8*sec, n(512), record.StatusOK), rec(14*sec, n(512), record.StatusError),
	}
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if pc := lv.PrefixCache; pc == nil || pc.HitRate != 0.25 || pc.Source != PrefixFromUsage || pc.UsageHitRate != 0.25 {
		t.Fatalf("prefix cache %+v: want 0.25 from usage", pc)
	}
	half, gauge := 0.5, 0.75
	run.Server = &record.ServerStats{Samples: 3, PrefixCacheHitRate: &half, PrefixCacheSource: record.PrefixFromCounters,
		Series: []string{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"}}
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if pc := lv.PrefixCache; pc == nil || pc.HitRate != 0.5 || pc.Source != PrefixFromCounters || pc.UsageHitRate != 0.25 {
		t.Fatalf("prefix cache %+v: want 0.5 from the counters, 0.25 from usage", pc)
	}
	b, err := json.Marshal(lv)
	if err != nil || !strings.Contains(string(b), `"prefix_cache":{"hit_rate":0.5,"source":"server_counters","usage_hit_rate":0.25}`) {
		t.Errorf("analysis.json level %s (%v)", b, err)
	}
	// A gauge does not measure the window: the usage wins over it, and it is used without.
	run.Server = &record.ServerStats{Samples: 3, PrefixCacheHitRate: &gauge, PrefixCacheSource: record.PrefixFromGauge, Series: []string{"sglang:cache_hit_rate"}}
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if pc := lv.PrefixCache; pc == nil || pc.HitRate != 0.25 || pc.Source != PrefixFromUsage {
		t.Fatalf("prefix cache %+v: want 0.25 from usage over the gauge", pc)
	}
	noUsage := slices.Clone(recs)
	for i := range noUsage {
		noUsage[i].CachedTokens = nil
	}
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, noUsage), DefaultOptions())[0]
	if pc := lv.PrefixCache; pc == nil || pc.HitRate != 0.75 || pc.Source != PrefixFromGauge || pc.UsageHitRate.OK() {
		t.Fatalf("prefix cache %+v: want 0.75 from the gauge", pc)
	}
	for i := range recs {
		recs[i].CachedTokens = nil
	}
	run.Server = nil
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if b, _ := json.Marshal(lv); lv.PrefixCache != nil || strings.Contains(string(b), "prefix_cache") {
		t.Errorf("unmeasured: %+v", lv.PrefixCache)
	}
}

// TestSummarizePrefixCacheRate: a rate level's usage hit rate counts the window's successful
// arrivals, as its other usage figures do: the request scheduled before the window (cached
// 512 of 512) is left out, the one scheduled inside and completed after it (0 of 512) is
// counted with the one inside (256 of 512): 256 ÷ 1024.
func TestSummarizePrefixCacheRate(t *testing.T) {
	run := record.LevelRun{Index: 0, OfferedRPS: 0.5, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
	n := func(v int) *int { return &v }
	rec := func(sched, sent int64, cached int) record.Record {
		return record.Record{Scheduled: sched, Sent: sent, TTFT: 100 * time.Millisecond, E2E: 2 * time.Second, OutputTokens: 2,
			PromptTokens: 512, Status: record.StatusOK, CachedTokens: n(cached)}
	}
	recs := []record.Record{rec(9*sec, 10*sec+1, 512), rec(12*sec, 12*sec, 256), rec(19*sec, 19*sec, 0)}
	lv := Summarize([]record.Level{{Run: run, Records: recs}}, DefaultOptions())[0]
	if pc := lv.PrefixCache; !lv.IsRate() || pc == nil || pc.HitRate != 0.25 || pc.Source != PrefixFromUsage {
		t.Errorf("rate level prefix cache %+v, want 0.25 from the usage of the arrivals", pc)
	}
}
