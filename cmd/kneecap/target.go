package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
	"github.com/kneecap/kneecap/workload"
)

// target is the endpoint under test and the client that loads it.
type target struct {
	endpoint string
	client   *openai.Client
	// scrape is where server metrics are scraped (the simulator's /metrics in-process).
	scrape server.ServerMetricsConfig
	// stopSim stops the in-process simulator (nil for an endpoint).
	stopSim func() error
}

// close closes the client's connections and stops the simulator.
func (t *target) close() {
	if t.client != nil {
		t.client.Close()
	}
	if t.stopSim != nil {
		_ = t.stopSim()
	}
}

// startTarget starts the target of cfg: its endpoint, or, without target.url, the simulator
// in-process on a free loopback port (cfg then records the resolved simulator and its model).
// The client's connection pool holds the most workers a level of levels runs here.
func startTarget(e *env, cfg *config.Config, levels []int) (*target, error) {
	t := &target{endpoint: cfg.Target.URL, scrape: cfg.ServerMetrics}
	if t.endpoint == "" {
		simCfg, err := sim.Resolve(cfg.Simulator)
		if err != nil {
			return nil, usageError("sweep: simulator: %w", err)
		}
		running, err := sim.Start(simCfg, "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("sweep: start simulator: %w", err)
		}
		t.stopSim = running.Close
		cfg.Simulator = simCfg
		if cfg.Target.Model == "" {
			cfg.Target.Model = simCfg.Model
		}
		t.endpoint = running.URL
		if t.scrape.URL == "" {
			// Not written to config.yaml: the port is new on every run.
			t.scrape.URL = strings.TrimSuffix(running.URL, "/v1") + "/metrics"
		}
		fmt.Fprintf(e.stderr, "kneecap: simulator %s at %s\n", simCfg, t.endpoint)
	}
	client, err := openai.New(openai.Options{
		BaseURL:            t.endpoint,
		Model:              cfg.Target.Model,
		API:                cfg.Target.API,
		APIKey:             apiKey(e, *cfg),
		Header:             cfg.Target.HTTPHeader(),
		ExtraBody:          cfg.Target.ExtraBody,
		RequestTimeout:     cfg.Target.RequestTimeout,
		TTFTTimeout:        cfg.Target.TTFTTimeout,
		StallTimeout:       cfg.Target.StallTimeout,
		MaxConns:           sweep.MaxWorkers(levels, cfg.Shard.Index, cfg.Shard.Count),
		CAFile:             cfg.Target.TLS.CAFile,
		InsecureSkipVerify: cfg.Target.TLS.InsecureSkipVerify,
		RecordChunks:       cfg.Sweep.RecordChunks == nil || *cfg.Sweep.RecordChunks,
	})
	if err != nil {
		t.close()
		return nil, usageError("sweep: %w", err)
	}
	t.client = client
	if cfg.Target.TLS.InsecureSkipVerify {
		fmt.Fprintln(e.stderr, "kneecap: WARNING: TLS certificate verification is off (target.tls.insecure_skip_verify)")
	}
	return t, nil
}

// preflight checks the target before the sweep (server.RunPreflight): a model it does not
// serve is exit 2, an unreachable or failing endpoint exit 3, with one line naming the URL and
// the cause. A plan whose smallest level cannot complete min_requests in max_duration at the
// probe's pace is warned about (windowWarning).
func preflight(ctx context.Context, e *env, t *target, s *sweepPrep) error {
	model := s.cfg.Target.Model
	pf, err := server.RunPreflight(ctx, t.client, model, server.PreflightTimeout)
	var notServed *server.ModelNotServedError
	switch {
	case errors.As(err, &notServed):
		return usageError("sweep: preflight: %s %v", redact.URL(t.endpoint), err)
	case err != nil:
		return withCode(exitUnreachable, fmt.Errorf("sweep: preflight: %s: %v", redact.URL(t.endpoint), err))
	}
	if pf.ModelsErr != nil {
		fmt.Fprintf(e.stderr, "kneecap: warning: GET %s/models failed (%v); the probe request worked, continuing\n", redact.URL(t.endpoint), pf.ModelsErr)
	}
	fmt.Fprintf(e.stderr, "kneecap: preflight ok: model %s, probe TTFT %s\n", model, pf.TTFT.Round(100*time.Microsecond))
	_, out := s.cfg.Workload.NominalLengths()
	if w := pf.CheckWindow(s.cfg.Sweep.MinRequests, s.cfg.Sweep.LongestWindow(), s.levels, out, workload.MeanThink(s.cfg.Workload, s.workload)); !w.Fits {
		fmt.Fprintln(e.stderr, windowWarning(w, s.cfg.Sweep.MinRequests))
	}
	return nil
}

// serverDown is the error of a sweep that stopped because its server stopped answering, after
// everything measured was written to dir: exit 3 when no request could connect (as the
// preflight's unreachable target), 1 when the server took the requests and answered none
// within target.ttft_timeout or target.stall_timeout; nil for any other stop.
func serverDown(out sweep.Outcome, dir string) error {
	switch {
	case out.Unreachable:
		return withCode(exitUnreachable, fmt.Errorf("sweep: %s (results so far in %s)", out.StopReason, dir))
	case out.Silent:
		return withCode(exitFailure, fmt.Errorf("sweep: %s (results so far in %s)", out.StopReason, dir))
	}
	return nil
}

// windowWarning says that the plan's smallest level cannot complete minRequests requests in
// its longest window (server.WindowCheck), and what would.
func windowWarning(w server.WindowCheck, minRequests int) string {
	per := "one request takes about " + shortDuration(w.E2E.Round(time.Millisecond))
	if w.OutputTokens > 1 {
		per += fmt.Sprintf(" (%g output tokens at the probe's pace)", w.OutputTokens)
	}
	round := time.Second
	if w.Need < time.Minute {
		round = 100 * time.Millisecond
	}
	return fmt.Sprintf("kneecap: warning: at concurrency %d %s: min_requests %d need a window of about %s, more than max_duration %s; "+
		"the level would end short of them, kept only as imprecise (its percentiles on fewer requests, no retry): set sweep.max_duration (--max-duration) to at least %s, or lower sweep.min_requests",
		w.Concurrency, per, minRequests, shortDuration(w.Need.Round(round)), shortDuration(w.Max), shortDuration(w.Need.Round(round)))
}

// recordServer asks the server what it is (server.ServerInfoPaths; not when
// target.server_info is false, and only on shard 0 of a sharded sweep, whose merge keeps
// shard 0's) and records the answer with kneecap's version in the results directory. A
// resumed run keeps what it recorded first (a run from before this record gets it now) and
// warns when the server or kneecap now differ. It returns what the server says (nil: nothing).
func recordServer(ctx context.Context, e *env, client *openai.Client, cfg config.Config, dir *rundir.Dir, done *rundir.Run) (*record.ServerInfo, error) {
	bi, ok := debug.ReadBuildInfo()
	tool := version(bi, ok)
	var bodies map[string][]byte
	if (cfg.Target.ServerInfo == nil || *cfg.Target.ServerInfo) && cfg.Shard.Index == 0 {
		bodies = client.ServerInfo(ctx)
	}
	info := server.IdentifyServer(bodies)
	client.SetMaxTokensPerChunk(maxTokensPerChunk(cfg.Target.TokensPerChunk, info, done))
	if done != nil && (done.Kneecap != "" || done.Server != nil) {
		if was, now := done.Server.String(), info.String(); was != now && len(bodies) > 0 {
			fmt.Fprintf(e.stderr, "kneecap: warning: the server now says %q; the levels so far measured %q (levels.json keeps the first)\n", now, was)
		}
		if done.Kneecap != tool {
			fmt.Fprintf(e.stderr, "kneecap: warning: this is kneecap %s; the levels so far were measured by %s (levels.json keeps the first)\n", tool, done.Kneecap)
		}
		return info, dir.SetProvenance(done.Kneecap, done.Server, nil)
	}
	var doc []byte
	if len(bodies) > 0 {
		var err error
		if doc, err = server.RedactServerInfo(bodies); err != nil {
			return nil, err
		}
	}
	if info != nil {
		fmt.Fprintf(e.stderr, "kneecap: server: %s, from %s\n", info, info.From)
	}
	if err := dir.SetProvenance(tool, info, doc); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return info, nil
}

// maxTokensPerChunk is the bound of tokens in one content chunk that usage is checked
// against (DESIGN §7): 4 × the tokens per chunk the configuration declares, else the server's
// info (what a resumed run recorded first), else 0 (the client's default).
func maxTokensPerChunk(declared int, info *record.ServerInfo, done *rundir.Run) int {
	if declared <= 0 && done != nil && done.Server != nil {
		declared = done.Server.TokensPerChunk()
	}
	if declared <= 0 {
		declared = info.TokensPerChunk()
	}
	return 4 * declared
}

// startScraper starts scraping the server's Prometheus metrics for the whole sweep when sc
// names a URL: each sample is appended to the directory's server_metrics.jsonl as it is
// taken, and plan summarizes them per window. stop ends the scraping and reports failed
// scrapes and write errors (a no-op without a URL).
func startScraper(ctx context.Context, sc server.ServerMetricsConfig, dir *rundir.Dir, plan *sweep.Plan) (stop func() error, err error) {
	if sc.URL == "" || sc.URL == metricsOff {
		return func() error { return nil }, nil
	}
	s, err := server.NewScraper(sc, nil)
	if err != nil {
		return nil, usageError("sweep: server_metrics: %w", err)
	}
	w, err := dir.ServerMetrics()
	if err != nil {
		return nil, err
	}
	s.Record(w)
	plan.Scraper = s
	return s.Start(ctx), nil
}
