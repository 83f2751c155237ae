package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/sim"
)

// maxRetryExcluded bounds sweep.retry_excluded: the k-th retry runs 2^k windows, so four
// already run a level sixteen times as long.
const maxRetryExcluded = 4

// Validate reports every problem of the configuration at once (errors.Join), one line each,
// naming FILE:LINE when the config was read from a file (or the flag that set the value).
func (c Config) Validate() error {
	v := &validation{c: &c}
	if strings.ContainsAny(c.Name, `/\`) || c.Name == "." || c.Name == ".." || strings.ContainsFunc(c.Name, isControl) {
		v.bad("name", "%q: must not contain path separators or control characters (it names the results directory)", c.Name)
	}
	v.target()
	v.workload()
	v.embeddings()
	v.sweep()
	v.analysis()
	v.gpuMetrics()
	v.shard()
	v.shardClock()
	v.scenarios()
	sortProblems(v.errs)
	return errors.Join(v.errs...)
}

// validation collects the problems of one configuration.
type validation struct {
	c    *Config
	errs []error
}

// bad records a problem of key, placed where key was set.
func (v *validation) bad(key, format string, args ...any) {
	v.errs = append(v.errs, &Error{Where: v.c.where(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// badAt records a problem of key, placed where the first of at was set.
func (v *validation) badAt(key string, at []string, format string, args ...any) {
	v.errs = append(v.errs, &Error{Where: v.c.where(at...), Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (v *validation) positive(key string, d time.Duration) {
	if d <= 0 {
		v.bad(key, "is %v: must be > 0", d)
	}
}

func (v *validation) nonNegative(key string, d time.Duration) {
	if d < 0 {
		v.bad(key, "is %v: must be ≥ 0", d)
	}
}

func (v *validation) rate(key string, r float64) {
	if !(r >= 0 && r <= 1) {
		v.bad(key, "is %g: must be in [0, 1]", r)
	}
}

// target checks target: and, without a target URL, simulator:.
func (v *validation) target() {
	t := v.c.Target
	if t.URL != "" {
		if err := checkBaseURL(t.URL); err != nil {
			v.bad("target.url", "%v", err)
		}
		if t.Model == "" && len(v.c.Workload.Models) == 0 {
			v.badAt("target.model", []string{"target.model", "target.url"}, "missing: a model is required when target.url is set (or workload.models)")
		}
	}
	if strings.ContainsFunc(t.Model, unicode.IsControl) {
		v.bad("target.model", "%q has a control character", t.Model)
	}
	if !slices.Contains(targetAPIs, t.API) {
		v.bad("target.api", "%q: must be one of %s", t.API, apiNames(targetAPIs))
	}
	if t.APIKeyEnv != "" && !isEnvName(t.APIKeyEnv) {
		// Not quoted: a key given by mistake for the variable's name would be printed.
		v.bad("target.api_key_env", "not an environment variable's name (a key? give the variable's name)")
	}
	v.positive("target.request_timeout", t.RequestTimeout)
	v.nonNegative("target.ttft_timeout", t.TTFTTimeout)
	v.nonNegative("target.stall_timeout", t.StallTimeout)
	v.atMost("target.request_timeout", t.RequestTimeout, maxPhase)
	v.atMost("target.ttft_timeout", t.TTFTTimeout, maxPhase)
	v.atMost("target.stall_timeout", t.StallTimeout, maxPhase)
	v.nonNegative("target.answer_budget", t.AnswerBudget)
	v.atMost("target.answer_budget", t.AnswerBudget, maxPhase)
	if t.TokensPerChunk < 0 {
		v.bad("target.tokens_per_chunk", "is %d: must be ≥ 0 (0 = as the server says, else unknown)", t.TokensPerChunk)
	}
	v.headers(t.Headers)
	for _, k := range slices.Sorted(maps.Keys(t.ExtraBody)) {
		if by, ok := measuredBodyKeys[k]; ok {
			v.bad("target.extra_body."+k, "kneecap sets %s from %s: extra_body would replace it in every request and the records would describe another request; remove it", k, by)
		}
	}
	if t.TLS.CAFile != "" {
		if err := readable(t.TLS.CAFile); err != nil {
			v.bad("target.tls.ca_file", "%v", err)
		}
	}
	if t.URL == "" {
		v.simulator()
	}
}

// measuredBodyKeys are the request body's fields that kneecap sets, with where it takes each
// from: target.extra_body is merged over the body (openai's mergeBody), so one of these there
// would change what is sent without the records knowing.
var measuredBodyKeys = map[string]string{
	"model":                 "target.model (or workload.models)",
	"messages":              "the workload",
	"prompt":                "the workload",
	"input":                 "the workload",
	"stream":                "kneecap itself (it measures streams)",
	"stream_options":        "kneecap itself (the usage it reads)",
	"max_tokens":            "workload.output_tokens",
	"max_completion_tokens": "workload.output_tokens",
	"max_output_tokens":     "workload.output_tokens",
	"n":                     "kneecap itself (one answer a request: n > 1 would count several as one)",
}

// SimulatorProblems reports every problem of the simulator: section (errors.Join), one line
// each naming FILE:LINE of its key, as Validate does; `kneecap sim -c` checks only this section.
func (c Config) SimulatorProblems() error {
	v := &validation{c: &c}
	v.simulator()
	return errors.Join(v.errs...)
}

// simulator checks simulator: with sim.Resolve, placing each "sim: FIELD: problem" where
// simulator.FIELD was set (or, when not set in the file, where its section was).
func (v *validation) simulator() {
	_, err := sim.Resolve(v.c.Simulator)
	for _, p := range Problems(err) {
		field, rest, ok := strings.Cut(strings.TrimPrefix(p, "sim: "), ": ")
		if ok && !strings.ContainsAny(field, " \"") {
			v.bad("simulator."+field, "%s", rest)
			continue
		}
		v.bad("simulator", "%s", p)
	}
}

// workload checks workload: (workload.WorkloadConfig.Validate names its keys) and its dataset.
func (v *validation) workload() {
	wl := v.c.Workload
	for _, err := range wl.Validate() {
		msg := err.Error()
		if k, rest, ok := strings.Cut(msg, ": "); ok && namesKey(msg) {
			v.badAt(k, v.c.causeFirst(k, rest), "%s", rest)
		} else {
			v.bad("workload", "%s", msg)
		}
	}
	if wl.Dataset != "" {
		if err := readable(wl.Dataset); err != nil {
			v.bad("workload.dataset", "%v", err)
		}
	}
	if wl.Trace.Enabled() {
		if err := readable(wl.Trace.File); err != nil {
			v.bad("workload.trace.file", "%v", err)
		}
	}
	if wl.Tokenizer != "" {
		if err := readable(wl.Tokenizer); err != nil {
			v.bad("workload.tokenizer", "%v", err)
		}
	}
	if wl.Sessions != nil {
		v.sessions()
	}
}

// sessions checks workload.sessions against the keys it cannot go with.
func (v *validation) sessions() {
	if v.c.Target.API == record.APICompletions {
		v.badAt("workload.sessions", []string{"workload.sessions", "target.api"},
			"needs target.api chat: a conversation's history is sent as chat messages (target.api is completions)")
	}
	if v.c.Sweep.RateMode() {
		v.badAt("workload.sessions", []string{"workload.sessions", "sweep.mode"},
			"a conversation is a closed loop of turns: it cannot be run by an arrival-rate sweep (sweep.mode rate, --rates); remove one of the two")
	}
}

// sweep checks sweep: the levels, the level protocol and the stop rules.
func (v *validation) sweep() {
	s := v.c.Sweep
	v.mode()
	if _, err := s.Levels.Expand(); err != nil && !s.RateMode() {
		v.bad("sweep.levels", "%v", err)
	}
	v.nonNegative("sweep.warmup", s.Warmup)
	if s.WarmupMax < s.Warmup {
		v.bad("sweep.warmup_max", "%v is below warmup %v", s.WarmupMax, s.Warmup)
	}
	v.positive("sweep.duration", s.Duration)
	if s.MinRequests < 0 {
		v.bad("sweep.min_requests", "is %d: must be ≥ 0", s.MinRequests)
	}
	if s.MaxDuration < s.Duration {
		v.bad("sweep.max_duration", "%v is below duration %v", s.MaxDuration, s.Duration)
	}
	if !(s.CITarget > 0 && s.CITarget < 1) {
		v.bad("sweep.ci_target", "is %g: must be in (0, 1)", s.CITarget)
	}
	v.positive("sweep.drain_timeout", s.DrainTimeout)
	v.nonNegative("sweep.cooldown", s.Cooldown)
	if s.Refine < 0 {
		v.bad("sweep.refine", "is %d: must be ≥ 0 (0 = no added levels)", s.Refine)
	}
	if !(s.ClientTolerance > 0 && s.ClientTolerance < 1) {
		v.bad("sweep.client_tolerance", "is %g: must be in (0, 1) (a fraction of each number: 0.01 = 1%%)", s.ClientTolerance)
	}
	if s.RetryExcluded < 0 || s.RetryExcluded > maxRetryExcluded {
		v.bad("sweep.retry_excluded", "is %d: must be in [0, %d] (each retry doubles the window; 0 = never)", s.RetryExcluded, maxRetryExcluded)
	}
	v.rate("sweep.stop.max_error_rate", s.Stop.MaxErrorRate)
	v.nonNegative("sweep.stop.stop_ttft", s.Stop.StopTTFT)
	v.nonNegative("sweep.stop.budget", s.Stop.Budget)
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"sweep.warmup", s.Warmup}, {"sweep.warmup_max", s.WarmupMax}, {"sweep.duration", s.Duration},
		{"sweep.max_duration", s.MaxDuration}, {"sweep.drain_timeout", s.DrainTimeout}, {"sweep.cooldown", s.Cooldown},
		{"sweep.stop.stop_ttft", s.Stop.StopTTFT}} {
		if (d.key == "sweep.warmup_max" && s.Warmup > maxPhase) || (d.key == "sweep.max_duration" && s.Duration > maxPhase) {
			continue // derived from the other, already named
		}
		v.atMost(d.key, d.v, maxPhase)
	}
	v.atMost("sweep.stop.budget", s.Stop.Budget, maxBudget)
}

// Upper bounds of the durations a sweep waits for: a phase or a timeout of more than a day, or
// a budget of more than a week, is a typo (87600h) that would leave kneecap waiting for years.
const (
	maxPhase  = 24 * time.Hour
	maxBudget = 7 * 24 * time.Hour
)

// atMost reports d above limit.
func (v *validation) atMost(key string, d, limit time.Duration) {
	if d > limit {
		v.bad(key, "is %v: must be ≤ %v", d, limit)
	}
}

// analysis checks slo:, server_metrics:, analysis:, plan: and output:.
func (v *validation) analysis() {
	c := v.c
	for _, m := range analysis.SLOMetrics {
		for _, p := range analysis.SLOPercentiles {
			v.nonNegative("slo."+analysis.Objective{Metric: m, Percentile: p}.Name(), c.SLO.Get(m, p))
		}
	}
	if c.ServerMetrics.URL != "" && c.ServerMetrics.URL != "off" {
		if err := checkURL(c.ServerMetrics.URL); err != nil {
			v.bad("server_metrics.url", "%v", err)
		}
		v.positive("server_metrics.interval", c.ServerMetrics.Interval)
	} else {
		v.nonNegative("server_metrics.interval", c.ServerMetrics.Interval)
	}
	if !(c.Analysis.KneeGain > 0 && c.Analysis.KneeGain < 1) {
		v.bad("analysis.knee_gain", "is %g: must be in (0, 1)", c.Analysis.KneeGain)
	}
	v.plan()
	if strings.ContainsFunc(c.Output.Dir, isControl) {
		v.bad("output.dir", "%q: must not contain control characters", c.Output.Dir)
	}
}

// ValidatePlan reports the problems of the configuration's plan: alone (Validate checks them
// with the rest), naming the flag that set a value (Override): the check of analyze's --plan-*
// flags.
func (c Config) ValidatePlan() error {
	v := &validation{c: &c}
	v.plan()
	return errors.Join(v.errs...)
}

// plan checks plan:: every demand and cost a number ≥ 0.
func (v *validation) plan() {
	p := v.c.Plan
	if p.ConcurrentUsers < 0 {
		v.bad("plan.concurrent_users", "is %d: must be ≥ 0", p.ConcurrentUsers)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"plan.qps", p.QPS}, {"plan.output_tps", p.OutputTPS}, {"plan.replica_cost_per_hour", p.ReplicaCostPerHour},
		{"plan.energy_cost_per_kwh", p.EnergyCostPerKWh}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			v.bad(f.key, "is %g: must be ≥ 0", f.v)
		}
	}
	if p.GPUsPerReplica < 0 {
		v.bad("plan.gpus_per_replica", "is %d: must be ≥ 0", p.GPUsPerReplica)
	}
}

// shard checks shard: and what a sharded sweep needs of the rest (DESIGN §8).
func (v *validation) shard() {
	sh, s := v.c.Shard, v.c.Sweep
	switch {
	case sh.Count < 0:
		v.bad("shard.count", "is %d: must be ≥ 0 (0 = not sharded)", sh.Count)
		return
	case sh.Count == 0 && (sh.StartAt != "" || sh.Index != 0):
		v.badAt("shard.count", []string{"shard.start_at", "shard.index", "shard.count"}, "missing: shard.start_at or shard.index is set, but a sharded sweep also needs its shard count (--shard I/N)")
		return
	case sh.Count == 0:
		return
	}
	if sh.Index < 0 || sh.Index >= sh.Count {
		v.bad("shard.index", "is %d: must be in [0, %d)", sh.Index, sh.Count)
	}
	if sh.StartAt == "" {
		v.badAt("shard.start_at", []string{"shard.start_at", "shard.count"}, "missing: the shards start the first level at this agreed time (RFC 3339)")
	} else if at, err := sh.Start(); err != nil {
		v.bad("shard.start_at", "%q: not an RFC 3339 time such as 2026-11-30T10:00:00Z", sh.StartAt)
	} else if ahead := time.Until(at); ahead > maxPhase {
		v.bad("shard.start_at", "%s is %v ahead: must be within %v (each shard would wait until then)", sh.StartAt, ahead.Round(time.Hour), maxPhase)
	}
	if v.c.Target.URL == "" {
		v.badAt("target.url", []string{"target.url", "shard.count"}, "missing: a sharded sweep loads one server from several machines, so it needs target.url (not the built-in simulator)")
	}
	if s.Refine > 0 {
		v.badAt("sweep.refine", []string{"sweep.refine", "shard.count"}, "is %d: a sharded sweep cannot add levels (where to add them is decided from the merged results, which no shard has); merge, then run one process with the added levels", s.Refine)
	}
	if s.Warmup <= 0 {
		v.badAt("sweep.warmup", []string{"sweep.warmup", "shard.count"}, "is %v: a sharded sweep needs a warmup > 0 (each window starts at a fixed time after its level)", s.Warmup)
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkURL accepts absolute http(s) URLs with a host and no whitespace around them.
func checkURL(raw string) error {
	if t := strings.TrimSpace(raw); t != raw {
		return fmt.Errorf("%q has whitespace before or after it: remove it (it would be sent as part of the URL)", redact.URL(t))
	}
	u, err := url.Parse(raw)
	if err != nil {
		// *url.Error quotes the whole URL, userinfo included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q is not a URL: %w", redact.URL(raw), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", redact.URL(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("%q: no host", redact.URL(raw))
	}
	return nil
}

// checkBaseURL accepts what checkURL does, without a query string or a fragment: kneecap
// appends /chat/completions (and /models, /tokenize, …) to a base URL, so a query would
// end up inside every request's path (…/v1?api_key=KEY/chat/completions), and print its
// secrets with it.
func checkBaseURL(raw string) error {
	if err := checkURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if u.RawQuery != "" || u.ForceQuery || strings.Contains(raw, "?") {
		return fmt.Errorf("%q followed by a query string (?…): a base URL takes none, as kneecap appends /chat/completions to it; "+
			"give the API key through target.api_key_env", redact.URLWithoutQuery(raw))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%q followed by a fragment (#…): a base URL takes none", redact.URLWithoutQuery(strings.SplitN(raw, "#", 2)[0]))
	}
	return nil
}

// readable checks that path names a readable regular file.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot read: %w", err)
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	return nil
}
