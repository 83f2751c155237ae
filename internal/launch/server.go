package launch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sweep"
)

// recordServer asks the server what it is (server.ServerInfoPaths; not when
// target.server_info is false, and only on shard 0 of a sharded sweep, whose merge keeps
// shard 0's) and records the answer with kneecap's version tool in the results directory. A
// resumed run keeps what it recorded first (a run from before this record gets it now) and
// warns when the server or kneecap now differ. It returns what the server says (nil: nothing).
func (s *Sweep) recordServer(ctx context.Context, t *Target, tool string) (*record.ServerInfo, error) {
	cfg, client, done := s.Cfg, t.client, s.done
	var bodies map[string][]byte
	if (cfg.Target.ServerInfo == nil || *cfg.Target.ServerInfo) && cfg.Shard.Index == 0 {
		bodies = client.ServerInfo(ctx)
	}
	info := server.IdentifyServer(bodies)
	bound := maxTokensPerChunk(cfg, info, done)
	client.SetMaxTokensPerChunk(bound)
	s.Dir.SetTokensPerChunkBound(bound)
	if done != nil && (done.Kneecap != "" || done.Server != nil) {
		if was, now := done.Server.String(), info.String(); was != now && len(bodies) > 0 {
			fmt.Fprintf(s.Log, "kneecap: warning: the server now says %q; the levels so far measured %q (levels.json keeps the first)\n", now, was)
		}
		if done.Kneecap != tool {
			fmt.Fprintf(s.Log, "kneecap: warning: this is kneecap %s; the levels so far were measured by %s (levels.json keeps the first)\n", tool, done.Kneecap)
		}
		return info, s.Dir.SetProvenance(done.Kneecap, done.Server, nil)
	}
	var doc []byte
	if len(bodies) > 0 {
		var err error
		if doc, err = server.RedactServerInfo(bodies); err != nil {
			return nil, err
		}
	}
	if info != nil {
		fmt.Fprintf(s.Log, "kneecap: server: %s, from %s\n", info, info.From)
	}
	if err := s.Dir.SetProvenance(tool, info, doc); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return info, nil
}

// maxTokensPerChunk is the bound of tokens in one content chunk that usage is checked
// against (record.ChunkBound, DESIGN §7), with the server's info info, or the info a resumed
// run (done) recorded first.
func maxTokensPerChunk(cfg config.Config, info *record.ServerInfo, done *rundir.Run) int {
	if done != nil && done.Server != nil {
		info = done.Server
	}
	return record.ChunkBound(cfg.Target.TokensPerChunk, info, cfg.Shard.Sharded())
}

// startScraper starts scraping the server's Prometheus metrics for the whole sweep when the
// target has a metrics URL: each sample is appended to dir's server_metrics.jsonl as it is
// taken, and plan summarizes them per window. stop ends the scraping and reports failed
// scrapes and write errors (a no-op without a URL).
func (t *Target) startScraper(ctx context.Context, dir *rundir.Dir, plan *sweep.Plan) (stop func() error, err error) {
	sc := t.scrape
	if sc.URL == "" || sc.URL == metricsOff {
		return func() error { return nil }, nil
	}
	s, err := server.NewScraper(sc, nil)
	if err != nil {
		return nil, exit.Usagef("sweep: server_metrics: %w", err)
	}
	w, err := dir.ServerMetrics()
	if err != nil {
		return nil, err
	}
	s.Record(w)
	plan.Scraper, t.scraper = s, s
	return s.Start(ctx), nil
}

const metricsOff = "off"

// metricsProbeTimeout bounds the probe of /metrics.
const metricsProbeTimeout = 2 * time.Second

// defaultMetricsURL is /metrics at the host of the base URL endpoint, where vLLM, SGLang,
// llama.cpp (--metrics) and TGI serve their Prometheus metrics: the scheme and host kept, the
// path, query and any user info dropped; "" for a URL that does not parse.
func defaultMetricsURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/metrics"}).String()
}

// probeMetrics reports whether GET u answers 200 with Prometheus text (a "# TYPE" or
// "# HELP" line among its first lines) within metricsProbeTimeout.
func probeMetrics(ctx context.Context, hc *http.Client, u string) bool {
	ctx, cancel := context.WithTimeout(ctx, metricsProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for i := 0; i < 200 && sc.Scan(); i++ {
		if l := sc.Text(); strings.HasPrefix(l, "# TYPE ") || strings.HasPrefix(l, "# HELP ") {
			return true
		}
	}
	return false
}

// findMetrics sets t's scrape URL to /metrics at the endpoint's host when no URL is
// configured (server_metrics.url empty, not "off") and the probe finds Prometheus text there,
// and says so on stderr.
func (t *Target) findMetrics(ctx context.Context, log io.Writer) {
	if t.scrape.URL != "" || t.stopSim != nil {
		return
	}
	u := defaultMetricsURL(t.Endpoint)
	if u == "" || !probeMetrics(ctx, &http.Client{}, u) {
		return
	}
	t.scrape.URL = u
	fmt.Fprintf(log, "kneecap: server metrics: scraping %s (found at the target's host; --server-metrics-url off to disable)\n", redact.URL(u))
}
