package launch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
	"github.com/kneecap/kneecap/workload"
)

// Target is the endpoint under test and the client that loads it.
type Target struct {
	// Endpoint is the base URL loaded: target.url, or the in-process simulator's.
	Endpoint string
	client   *openai.Client
	// scrape is where server metrics are scraped (the simulator's /metrics in-process).
	scrape server.ServerMetricsConfig
	// stopSim stops the in-process simulator (nil for an endpoint).
	stopSim func() error
	// scraper scrapes scrape once startScraper has started it (nil before, or without).
	scraper *server.Scraper
	// gpu samples the GPUs serving the target, found at launch (findGPU; nil: none); gpuFed
	// says the server metrics scrape feeds it.
	gpu    *server.GPUSampler
	gpuFed bool
}

// Close closes the client's connections and stops the simulator.
func (t *Target) Close() {
	if t.client != nil {
		t.client.Close()
	}
	if t.stopSim != nil {
		_ = t.stopSim()
	}
}

// Client is the client that loads the target, which sweep.Run drives.
func (t *Target) Client() record.Client { return t.client }

// Start starts the target and gets the sweep ready for its first level: the target
// (startTarget) and its preflight, the server metrics found at its host, the GPU telemetry
// (findGPU), the prompts sized in its tokens, the results directory opened with the sizing
// and what the server says it is (tool is kneecap's version, recorded beside it), a sessions
// workload's context limit, and the rates of --rates auto (its probe shown by newProgress).
func (s *Sweep) Start(ctx context.Context, tool string, newProgress NewProgress) (*Target, error) {
	s.startBudget()
	t, err := s.startTarget()
	if err != nil {
		return nil, err
	}
	if err := s.start(ctx, t, tool, newProgress); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (s *Sweep) start(ctx context.Context, t *Target, tool string, newProgress NewProgress) error {
	// Each wait before the first level has its own share of the answer budget (budget.go).
	pre, cancel := s.probesContext(ctx)
	hung, err := s.preflight(pre, t)
	cancel()
	if err != nil {
		return err
	}
	pre, cancel = s.probesContext(ctx)
	t.findMetrics(pre, s.Log)
	err = s.findGPU(pre, t)
	cancel()
	if err != nil {
		return err
	}
	if err := s.sizePrompts(ctx, t, hung); err != nil {
		return err
	}
	if err := s.openDir(t.Endpoint); err != nil {
		return err
	}
	s.recordSizing()
	// Not under the budget: the server's info has its own short bound (ServerInfoTimeout),
	// and a budget spent by the waits before must not lose it.
	info, err := s.recordServer(ctx, t, tool)
	if err != nil {
		return err
	}
	s.limitContext(info)
	return s.autoRates(ctx, t, newProgress)
}

// startTarget starts the target of the configuration: its endpoint, or, without target.url,
// the simulator in-process on a free loopback port (Cfg then records the resolved simulator
// and its model). The client's connection pool holds the most workers a level runs here.
func (s *Sweep) startTarget() (*Target, error) {
	cfg := &s.Cfg
	t := &Target{Endpoint: cfg.Target.URL, scrape: cfg.ServerMetrics}
	if t.Endpoint == "" {
		simCfg, err := sim.Resolve(cfg.Simulator)
		if err != nil {
			return nil, exit.Usagef("sweep: simulator: %w", err)
		}
		// It serves the models the workload names: those it does not serve already become
		// adapters of slowdown 1.
		simCfg = simCfg.WithModels(workload.ModelNames(cfg.Workload.Models))
		running, err := sim.Start(simCfg, "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("sweep: start simulator: %w", err)
		}
		t.stopSim = running.Close
		cfg.Simulator = simCfg
		if cfg.Target.Model == "" {
			cfg.Target.Model = simCfg.Model
		}
		t.Endpoint = running.URL
		if t.scrape.URL == "" {
			// Not written to config.yaml: the port is new on every run.
			t.scrape.URL = strings.TrimSuffix(running.URL, "/v1") + "/metrics"
		}
		fmt.Fprintf(s.Log, "kneecap: simulator %s at %s\n", simCfg, t.Endpoint)
	}
	if cfg.Target.Model == "" && len(cfg.Workload.Models) > 0 {
		cfg.Target.Model = cfg.Workload.Models[0].Name // what a request without a model asks
	}
	client, err := openai.New(openai.Options{
		BaseURL:            t.Endpoint,
		Model:              cfg.Target.Model,
		API:                cfg.Target.API,
		APIKey:             s.apiKey(),
		KeyFrom:            s.keyFrom(),
		Header:             cfg.Target.HTTPHeader(),
		ExtraBody:          cfg.Target.ExtraBody,
		RequestTimeout:     cfg.Target.RequestTimeout,
		TTFTTimeout:        cfg.Target.TTFTTimeout,
		StallTimeout:       cfg.Target.StallTimeout,
		MaxConns:           sweep.MaxWorkers(s.Levels, cfg.Shard.Index, cfg.Shard.Count),
		CAFile:             cfg.Target.TLS.CAFile,
		InsecureSkipVerify: cfg.Target.TLS.InsecureSkipVerify,
		RecordChunks:       cfg.Sweep.RecordChunks == nil || *cfg.Sweep.RecordChunks,
	})
	if err != nil {
		t.Close()
		return nil, exit.Usagef("sweep: %w", err)
	}
	t.client = client
	s.warnKeyEnv()
	if why := cfg.UnforcedLengths(); why != "" {
		fmt.Fprintln(s.Log, "kneecap: warning: "+why)
	}
	if cfg.Target.TLS.InsecureSkipVerify {
		fmt.Fprintln(s.Log, "kneecap: WARNING: TLS certificate verification is off (target.tls.insecure_skip_verify)")
	}
	return t, nil
}

// preflight checks the target before the sweep (server.RunPreflight): a model it does not
// serve (target.model or one of workload.models) is exit 2, an unreachable or failing
// endpoint exit 3, with one line naming the URL and the cause; one that accepted the
// connection and answered nothing within the bound also gets its results directory
// (preflightHung). A plan whose smallest level
// cannot complete min_requests in max_duration at the probe's pace is warned about
// (windowWarning). A target that lists the model but whose probe request failed is measured
// anyway (hung), as is one that answered (which the answer budget hears).
func (s *Sweep) preflight(ctx context.Context, t *Target) (hung bool, err error) {
	model := s.Cfg.Target.Model
	timeout, bound := s.preflightTimeout(server.PreflightTimeout)
	pf, err := server.RunPreflight(ctx, t.client, model, timeout, workload.ModelNames(s.Cfg.Workload.Models)...)
	var (
		notServed *server.ModelNotServedError
		down      *server.UnreachableError
	)
	switch {
	case errors.As(err, &notServed):
		return false, exit.Usagef("sweep: preflight: %s %v", redact.URL(t.Endpoint), err)
	case errors.As(err, &down) && down.Hung:
		// The server is there and serves the model: the sweep measures and records its failure
		// within what is left of the answer budget (DESIGN §3.1).
		fmt.Fprintf(s.Log, "kneecap: warning: preflight: %s lists the model but the probe request failed (%v): sweeping anyway to record it\n",
			redact.URL(t.Endpoint), err)
		s.hungClass = down.Class
		return true, nil
	case errors.As(err, &down) && down.Waited:
		err := exit.With(exit.Unreachable, fmt.Errorf("sweep: preflight: %s: %v%s", redact.URL(t.Endpoint), err, bound))
		if down.Silence != "" {
			return false, s.preflightHung(t, down.Silence, err)
		}
		return false, err
	case err != nil:
		return false, exit.With(exit.Unreachable, fmt.Errorf("sweep: preflight: %s: %v", redact.URL(t.Endpoint), err))
	}
	s.heard()
	t.client.SetPace(pf.Pace())
	if pf.ModelsErr != nil {
		fmt.Fprintf(s.Log, "kneecap: warning: GET %s/models failed (%v); the probe request worked, continuing\n", redact.URL(t.Endpoint), pf.ModelsErr)
	}
	served := "model " + strconv.Quote(model)
	if mix := s.Cfg.Workload.Models; len(mix) > 0 {
		served = "models " + server.Quoted(workload.ModelNames(mix)) + " (the probe asked " + strconv.Quote(model) + ")"
	}
	fmt.Fprintf(s.Log, "kneecap: preflight ok: %s, probe TTFT %s\n", served, pf.TTFT.Round(100*time.Microsecond))
	_, out := s.Cfg.Workload.NominalLengths()
	if w := pf.CheckWindow(s.Cfg.Sweep.MinRequests, s.Cfg.Sweep.LongestWindow(), s.Levels, out, workload.MeanThink(s.Cfg.Workload, s.workload)); !w.Fits {
		fmt.Fprintln(s.Log, windowWarning(w, s.Cfg.Sweep.MinRequests))
	}
	return false, nil
}

// windowWarning says that the plan's smallest level cannot complete minRequests requests in
// its longest window (server.WindowCheck), and what would.
func windowWarning(w server.WindowCheck, minRequests int) string {
	per := "one request takes about " + config.ShortDuration(w.E2E.Round(time.Millisecond))
	if w.OutputTokens > 1 {
		per += fmt.Sprintf(" (%g output tokens at the probe's pace)", w.OutputTokens)
	}
	round := time.Second
	if w.Need < time.Minute {
		round = 100 * time.Millisecond
	}
	need := config.ShortDuration(w.Need.Round(round))
	return fmt.Sprintf("kneecap: warning: at concurrency %d %s: min_requests %d need a window of about %s, more than max_duration %s; "+
		"the level would end short of them, kept only as imprecise (its percentiles on fewer requests, no retry): set sweep.max_duration (--max-duration) to at least %s, or lower sweep.min_requests",
		w.Concurrency, per, minRequests, need, config.ShortDuration(w.Max), need)
}

// ServerDown is the error of a sweep that stopped because its server stopped answering, after
// everything measured was written to dir: exit 3 when no request could connect (as the
// preflight's unreachable target), 1 when the server took the requests and answered none
// within target.ttft_timeout, target.stall_timeout or target.answer_budget, or ignored their
// max_tokens; nil for any other stop. A silent server that answered nothing at all
// (sweep.Outcome.NeverAnswered) is a NeverAnsweredError, which stops a grid.
func ServerDown(out sweep.Outcome, dir string) error {
	switch {
	case out.Unreachable:
		return exit.With(exit.Unreachable, fmt.Errorf("sweep: %s (results so far in %s)", out.StopReason, dir))
	case out.NeverAnswered:
		return exit.With(exit.Failure, &NeverAnsweredError{fmt.Errorf("sweep: %s (results so far in %s)", out.StopReason, dir)})
	case out.Silent, out.Overlong:
		return exit.With(exit.Failure, fmt.Errorf("sweep: %s (results so far in %s)", out.StopReason, dir))
	}
	return nil
}

// NeverAnsweredError is ServerDown's error of a server that took the requests and answered
// nothing at all until the answer budget ran out: a grid stops at it, since each of its
// scenarios would wait out the budget alike.
type NeverAnsweredError struct{ Err error }

func (e *NeverAnsweredError) Error() string { return e.Err.Error() }

func (e *NeverAnsweredError) Unwrap() error { return e.Err }

// checkHeaderAuth refuses an Authorization header beside an API key (key): both
// authenticate, and the header would silently replace the key (or the key the header).
func checkHeaderAuth(key string, cfg config.Config) error {
	if key == "" || cfg.Target.HTTPHeader().Get("Authorization") == "" {
		return nil
	}
	return exit.Usagef("sweep: --header Authorization (or target.headers) and the API key in $%s (target.api_key_env) both authenticate: give one (--api-key-env '' sends no key)",
		cfg.Target.APIKeyEnv)
}

// RedactedHeaders refuses a resumed run (or grid) in dir whose config.yaml lost a secret
// header's value (REDACTED) that --header did not give again.
func RedactedHeaders(dir string, cfg config.Config) error {
	for name, v := range cfg.Target.Headers {
		if v == redact.Value && redact.SecretHeader(name) {
			return exit.Usagef("sweep: --resume %s: config.yaml holds header %s as %s: give it again with --header '%s:VALUE'",
				dir, name, redact.Value, name)
		}
	}
	return nil
}
