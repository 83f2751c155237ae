package openai

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// TestSharedPrefixHitRate is issue 15's second acceptance test: workload.shared_prefix
// {count: 1, tokens: 256} with 512-token prompts (exact sizing by the simulator's /tokenize,
// subword rule, an 8-token chat template) against the simulator with prefix caching, at
// concurrency 1 and 4. Truth (DESIGN §3.6, §6): the simulator puts the template's ids first,
// so every prompt starts with the same T + L = 8 + 256 tokens (the shared text counts L, the
// template not), and a request after the prefix is cached hits ⌊(T + L) ÷ B⌋·B = 256 of its
// 512 tokens (block B = 16): 50%, within the 45–55%. One request sent before the
// sweep caches the prefix, so every request of the sweep hits exactly that: the rate from the
// server's counters and from the usage are both exactly 256 ÷ 512; the report's level table
// shows it.
func TestSharedPrefixHitRate(t *testing.T) {
	const prompt, prefix, template, block = 512, 256, 8, 16
	hit := (template + prefix) / block * block
	want := float64(hit) / prompt // 0.5
	sink := sharedPrefixSweep(t, prompt, prefix, template, block)
	for _, r := range sink.recs {
		if !r.OK() || r.CachedTokens == nil || r.PromptTokens != prompt || *r.CachedTokens != hit {
			t.Fatalf("record %+v: want a success of %d prompt tokens, %d of them cached", r, prompt, hit)
		}
	}
	levels := analysis.Summarize(record.GroupRecords(sink.runs, sink.recs), analysis.DefaultOptions())
	for i, lv := range levels {
		pc, run := lv.PrefixCache, sink.runs[i]
		if pc == nil || pc.Source != analysis.PrefixFromCounters || run.Server == nil || run.Server.PrefixCacheQueries < prompt {
			t.Fatalf("level %d: prefix cache %+v, server %+v", lv.Concurrency, pc, run.Server)
		}
		if pc.HitRate != analysis.Float(want) || pc.UsageHitRate != analysis.Float(want) || want < 0.45 || want > 0.55 {
			t.Errorf("level %d: hit rate %v (counters), %v (usage), want %v", lv.Concurrency, pc.HitRate, pc.UsageHitRate, want)
		}
		t.Logf("level %d: hit rate %.4f (counters, %g requests), %.4f (usage)", lv.Concurrency, pc.HitRate, run.Server.PrefixCacheQueries/prompt, pc.UsageHitRate)
	}
	res := analysis.Analyze(levels, analysis.Meta{}, analysis.DefaultOptions())
	var md bytes.Buffer
	if err := report.Markdown(&md, &res, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| prefix-cache hit |") || !strings.Contains(md.String(), fmt.Sprintf(" | %.1f%% | ", 100*levels[1].PrefixHitRate())) {
		t.Errorf("report.md does not show the hit rate %v:\n%s", levels[1].PrefixHitRate(), md.String())
	}
	// Without the metrics the usage is the source.
	for i := range sink.runs {
		sink.runs[i].Server = nil
	}
	for _, lv := range analysis.Summarize(record.GroupRecords(sink.runs, sink.recs), analysis.DefaultOptions()) {
		if pc := lv.PrefixCache; pc == nil || pc.Source != analysis.PrefixFromUsage || pc.HitRate != analysis.Float(want) {
			t.Errorf("level %d without metrics: %+v", lv.Concurrency, pc)
		}
	}
}

// sharedPrefixSweep runs the sweep of TestSharedPrefixHitRate: levels 1 and 4 of prompts of
// prompt tokens starting with one shared prefix of prefix tokens, sized exactly by the
// simulator's /tokenize (subword rule, a template-token chat template), its metrics scraped
// every 100 ms. One request of the workload (of a level the sweep does not run) is sent
// first, so the prefix is cached before the first level.
func sharedPrefixSweep(t *testing.T, prompt, prefix, template, block int) *memSink {
	t.Helper()
	cfg, err := sim.Profile(sim.ProfileDemo)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokenizer, cfg.ChatTemplateTokens, cfg.PrefixCaching, cfg.BlockSize = sim.TokenizerSubword, template, true, block
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); s.Close() })
	ctx := context.Background()
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	tk, err := cl.Tokenize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := workload.NewWorkload(workload.WorkloadConfig{InputTokens: workload.Dist{Dist: workload.DistFixed, Mean: float64(prompt)},
		OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 8}, FixedOutput: true, Seed: 1,
		SharedPrefix: workload.SharedPrefix{Count: 1, Tokens: prefix}}, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	wl, sz, err := workload.SizePrompts(ctx, wl, workload.SizingOptions{Method: record.SizingTokenize, API: record.APIChat, Endpoint: tk.Counter(), Client: cl})
	if err != nil || !sz.Exact {
		t.Fatalf("sizing %+v: %v", sz, err)
	}
	warm := wl.Next(99, 0, 0)
	var rec record.Record
	if cl.Do(ctx, &warm, &rec); !rec.OK() {
		t.Fatalf("the first request: %+v", rec)
	}
	sc, err := server.NewScraper(server.ServerMetricsConfig{URL: srv.URL + "/metrics", Interval: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := sc.Start(ctx)
	sink := &memSink{}
	plan := sweep.Plan{Levels: []int{1, 4}, Workload: wl, Scraper: sc, Protocol: sweep.Protocol{Warmup: 50 * time.Millisecond,
		WarmupMax: time.Second, Duration: 400 * time.Millisecond, MaxDuration: 400 * time.Millisecond, CITarget: 0.5, DrainTimeout: 5 * time.Second}}
	if _, err := sweep.Run(ctx, nil, plan, cl, sink); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return sink
}
