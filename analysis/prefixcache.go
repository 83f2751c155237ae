package analysis

import (
	"github.com/kneecap/kneecap/record"
)

// PrefixCache is a level's prefix-cache hit rate (DESIGN §3.7): the fraction of the prompt
// tokens the server's prefix cache already held.
type PrefixCache struct {
	// HitRate is the rate in [0, 1], from the first source that measured it: the server's
	// hit and query counters over the window, else the requests' usage, else the server's
	// hit-rate gauge (which does not measure the window: DESIGN §3.7).
	HitRate Float `json:"hit_rate"`
	// Source names where HitRate came from: PrefixFromCounters, PrefixFromUsage or
	// PrefixFromGauge.
	Source string `json:"source"`
	// UsageHitRate is Σ usage cached_tokens ÷ Σ prompt_tokens of the window's successful
	// requests whose usage reported cached tokens (closed loop: those completed in the
	// window; arrival rate: those that arrived in it, as the level's other usage figures);
	// null when none did.
	UsageHitRate Float `json:"usage_hit_rate"`
}

// Sources of PrefixCache.Source.
const (
	// PrefixFromCounters: the increase of the server's hit counter over the window ÷ that of
	// its query counter (vLLM V1; record.ServerStats).
	PrefixFromCounters = "server_counters"
	// PrefixFromUsage: the requests' usage.prompt_tokens_details.cached_tokens.
	PrefixFromUsage = "usage"
	// PrefixFromGauge: the mean over the window's scrapes of the server's hit-rate gauge
	// (vLLM V0: a lifetime rate; SGLang: the last prefill batch's), a proxy of the window's.
	PrefixFromGauge = "server_gauge"
)

// prefixSourceLegacy is the source an older kneecap wrote for either server source.
const prefixSourceLegacy = "server_metrics"

// KnownPrefixSource reports whether s is a PrefixCache.Source kneecap writes or wrote.
func KnownPrefixSource(s string) bool {
	switch s {
	case PrefixFromCounters, PrefixFromUsage, PrefixFromGauge, prefixSourceLegacy:
		return true
	}
	return false
}

// summarizePrefixCache sets lv.PrefixCache from run's server metrics and the records of its
// window the usage counts (in: a closed-loop level's successes completed in the window, a
// rate level's successful arrivals, as its other usage figures), in the order counters,
// usage, gauge; it stays nil when none measures the rate.
func summarizePrefixCache(lv *Level, run *record.LevelRun, records []record.Record, in func(*record.Record) bool) {
	var cached, prompt float64
	for i := range records {
		r := &records[i]
		if r.CachedTokens != nil && r.PromptTokens > 0 && in(r) {
			cached += float64(*r.CachedTokens)
			prompt += float64(r.PromptTokens)
		}
	}
	pc := &PrefixCache{HitRate: NaN(), UsageHitRate: NaN()}
	if prompt > 0 {
		pc.UsageHitRate = Float(cached / prompt)
	}
	rate, ok := run.Server.PrefixCacheRate()
	switch {
	case ok && run.Server.PrefixCacheSource == record.PrefixFromCounters:
		pc.HitRate, pc.Source = Float(rate), PrefixFromCounters
	case prompt > 0:
		pc.HitRate, pc.Source = pc.UsageHitRate, PrefixFromUsage
	case ok:
		pc.HitRate, pc.Source = Float(rate), PrefixFromGauge
	}
	if pc.Source != "" {
		lv.PrefixCache = pc
	}
}

// PrefixHitRate returns l's prefix-cache hit rate, NaN when unknown.
func (l *Level) PrefixHitRate() Float {
	if l.PrefixCache == nil {
		return NaN()
	}
	return l.PrefixCache.HitRate
}
