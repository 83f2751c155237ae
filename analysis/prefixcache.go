package analysis

import (
	"github.com/kneecap/kneecap/sweep"
)

// PrefixCache is a level's prefix-cache hit rate (DESIGN §3.7): the fraction of the prompt
// tokens the server's prefix cache already held.
type PrefixCache struct {
	// HitRate is the rate in [0, 1]: the server's metrics' where scraped (hit and query
	// counters, or a hit-rate gauge), else the usage's.
	HitRate Float `json:"hit_rate"`
	// Source names where HitRate came from: PrefixFromMetrics or PrefixFromUsage.
	Source string `json:"source"`
	// UsageHitRate is Σ usage cached_tokens ÷ Σ prompt_tokens of the successful requests
	// completed in the window whose usage reported cached tokens; null when none did.
	UsageHitRate Float `json:"usage_hit_rate"`
}

// Sources of PrefixCache.Source.
const (
	// PrefixFromMetrics: the server's metrics over the window (sweep.ServerStats).
	PrefixFromMetrics = "server_metrics"
	// PrefixFromUsage: the requests' usage.prompt_tokens_details.cached_tokens.
	PrefixFromUsage = "usage"
)

// summarizePrefixCache sets lv.PrefixCache from run's server metrics and the records
// completed in its window; it stays nil when neither measures the rate.
func summarizePrefixCache(lv *Level, run *sweep.LevelRun, records []sweep.Record) {
	var cached, prompt float64
	for i := range records {
		r := &records[i]
		if r.CachedTokens != nil && r.PromptTokens > 0 && sweep.CompletedInWindow(r, run.W0, run.W1) {
			cached += float64(*r.CachedTokens)
			prompt += float64(r.PromptTokens)
		}
	}
	pc := &PrefixCache{HitRate: NaN(), UsageHitRate: NaN()}
	if prompt > 0 {
		pc.UsageHitRate = Float(cached / prompt)
		pc.HitRate, pc.Source = pc.UsageHitRate, PrefixFromUsage
	}
	if rate, ok := run.Server.PrefixCacheRate(); ok {
		pc.HitRate, pc.Source = Float(rate), PrefixFromMetrics
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
