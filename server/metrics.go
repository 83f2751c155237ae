package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gonum.org/v1/gonum/stat"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
)

// ServerMetricsConfig configures Prometheus scraping of the server.
type ServerMetricsConfig struct {
	// URL is the metrics endpoint, for example http://host:8000/metrics; empty disables.
	URL string `yaml:"url"`
	// Interval is the scrape interval.
	Interval time.Duration `yaml:"interval"`
}

// maxMetricsBody caps one scrape's body, in bytes.
const maxMetricsBody = 16 << 20

// MetricSample is one scrape of the server's metrics: a line of server_metrics.jsonl. A
// quantity the server does not expose is nil (omitted from JSON).
type MetricSample struct {
	// TUnixNS is the scrape time in Unix nanoseconds (midpoint of request and response).
	TUnixNS int64 `json:"t_unix_ns"`
	// Running is the number of requests being decoded.
	Running *float64 `json:"running,omitempty"`
	// Waiting is the number of queued requests.
	Waiting *float64 `json:"waiting,omitempty"`
	// KVUsage is the KV-cache usage fraction in [0, 1].
	KVUsage *float64 `json:"kv_usage,omitempty"`
	// Preemptions is the cumulative preemption counter.
	Preemptions *float64 `json:"preemptions,omitempty"`
	// PrefixCacheHits and PrefixCacheQueries are the cumulative prefix-cache counters, in
	// tokens (vLLM V1); PrefixCacheHitRate is a hit-rate gauge in [0, 1] (vLLM V0, SGLang).
	PrefixCacheHits    *float64 `json:"prefix_cache_hits,omitempty"`
	PrefixCacheQueries *float64 `json:"prefix_cache_queries,omitempty"`
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
	// series names the families the values came from.
	series []string
}

// Scraper scrapes a Prometheus text endpoint (vLLM, SGLang, llama.cpp) every interval and
// keeps timestamped samples. Run is its loop, owned by the caller; Summarize and Samples
// may be called concurrently with Run. Scrape errors are counted, never fatal.
type Scraper struct {
	url      string
	shown    string // url without credentials, for errors
	interval time.Duration
	hc       *http.Client

	mu      sync.Mutex
	samples []MetricSample
	errors  int
	lastErr error
	gpu     *GPUSampler // fed the DCGM families of each scrape (FeedGPU), or nil

	lines jsonLines // Record's writer of server_metrics.jsonl
}

// NewScraper returns a Scraper for cfg (URL and Interval; Interval ≤ 0 means 1 s). hc nil
// uses a client whose per-scrape timeout is max(interval, 2 s).
func NewScraper(cfg ServerMetricsConfig, hc *http.Client) (*Scraper, error) {
	if cfg.URL == "" {
		return nil, errors.New("sweep: metrics scraper: empty url")
	}
	req, err := http.NewRequest(http.MethodGet, cfg.URL, nil)
	if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return nil, fmt.Errorf("sweep: metrics scraper: url %q is not an http(s) URL", redact.URL(cfg.URL))
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if hc == nil {
		hc = &http.Client{Timeout: max(cfg.Interval, 2*time.Second)}
	}
	return &Scraper{url: cfg.URL, shown: redact.URL(cfg.URL), interval: cfg.Interval, hc: hc,
		lines: jsonLines{what: "server metrics"}}, nil
}

// Run scrapes now and then every interval until ctx is done; it returns nil then.
func (s *Scraper) Run(ctx context.Context) error {
	runEvery(ctx, s.interval, func(ctx context.Context) {
		if _, err := s.Scrape(ctx); err != nil && ctx.Err() == nil {
			s.mu.Lock()
			s.errors++
			s.lastErr = err
			s.mu.Unlock()
		}
	})
	return nil
}

// Start runs Run in a goroutine until ctx is done or stop is called; stop waits for it and
// reports the scrapes that failed (the last error names the URL without credentials) and any
// error writing the samples recorded (Record).
func (s *Scraper) Start(ctx context.Context) (stop func() error) {
	end := startLoop(ctx, func(ctx context.Context) { _ = s.Run(ctx) }) // failed scrapes are counted
	return func() error {
		end()
		n, last := s.Errors()
		return loopErr("scrapes", n, len(s.Samples()), last, s.RecordErr())
	}
}

// Scrape fetches and parses the endpoint once and, on success, appends the sample (and feeds
// the GPU sampler the DCGM families it holds, FeedGPU).
func (s *Scraper) Scrape(ctx context.Context) (MetricSample, error) {
	t0 := time.Now()
	fams, err := getFamilies(ctx, s.hc, s.url, s.shown)
	if err != nil {
		return MetricSample{}, fmt.Errorf("sweep: %w", err)
	}
	sample := sampleOf(fams)
	sample.TUnixNS = t0.Add(time.Since(t0) / 2).UnixNano()
	s.mu.Lock()
	s.samples = append(s.samples, sample)
	g := s.gpu
	s.mu.Unlock()
	s.lines.write(&sample)
	if g != nil {
		g.add(GPUSample{TUnixNS: sample.TUnixNS, GPUs: dcgmGPUs(fams, g.match)})
	}
	return sample, nil
}

// FeedGPU makes every later scrape give g the readings of the DCGM families it holds (the
// GPUs g's Match selects): g is then sampled at the scrape's interval, by the same request.
func (s *Scraper) FeedGPU(g *GPUSampler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gpu = g
}

// getFamilies GETs the Prometheus text at u with hc and parses it; shown is u without
// credentials, for errors.
func getFamilies(ctx context.Context, hc *http.Client, u, shown string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := hc.Do(req)
	if err != nil {
		// *url.Error quotes the URL with its query (which may hold a token): name shown.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("scrape %s: %w", shown, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s", shown, resp.Status)
	}
	fams, err := parseFamilies(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", shown, err)
	}
	return fams, nil
}

// Record writes every later sample to w, one JSON object per line (server_metrics.jsonl), as
// it is taken: a sweep killed mid-way keeps the samples it had. The first write error ends
// the recording (scraping goes on) and is returned by RecordErr.
func (s *Scraper) Record(w io.Writer) { s.lines.set(w) }

// RecordErr returns the write error that ended Record's recording, or nil.
func (s *Scraper) RecordErr() error { return s.lines.Err() }

// parseMetrics parses Prometheus text exposition and extracts the kept series; TUnixNS is
// left 0.
func parseMetrics(r io.Reader) (MetricSample, error) {
	fams, err := parseFamilies(r)
	if err != nil {
		return MetricSample{}, err
	}
	return sampleOf(fams), nil
}

// parseFamilies parses Prometheus text exposition (metric names may contain ':').
func parseFamilies(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return fams, nil
}

// sampleOf extracts the kept series of fams; TUnixNS is left 0.
func sampleOf(fams map[string]*dto.MetricFamily) MetricSample {
	var m MetricSample
	m.Running = pick(fams, record.RunningSeries, &m.series)
	m.Waiting = pick(fams, record.WaitingSeries, &m.series)
	m.KVUsage = pick(fams, record.KVSeries, &m.series)
	m.Preemptions = pick(fams, record.PreemptionSeries, &m.series)
	m.PrefixCacheHits = pick(fams, record.PrefixHitSeries, &m.series)
	m.PrefixCacheQueries = pick(fams, record.PrefixQuerySeries, &m.series)
	m.PrefixCacheHitRate = pick(fams, record.PrefixRateSeries, &m.series)
	return m
}

// pick returns the sum over label sets of the first family of names present.
func pick(fams map[string]*dto.MetricFamily, names []string, seen *[]string) *float64 {
	for _, n := range names {
		f, ok := fams[n]
		if !ok || len(f.GetMetric()) == 0 {
			continue
		}
		var sum float64
		for _, m := range f.GetMetric() {
			switch {
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Untyped != nil:
				sum += m.GetUntyped().GetValue()
			}
		}
		*seen = append(*seen, n)
		return &sum
	}
	return nil
}

// Errors returns the number of failed scrapes and the last failure.
func (s *Scraper) Errors() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors, s.lastErr
}

// Samples returns a copy of the samples so far, in scrape order.
func (s *Scraper) Samples() []MetricSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// Summarize summarises the samples taken in [w0, w1) (Unix nanoseconds): mean and max
// running, mean and max waiting and the waiting count's trend (lineTrend), max KV usage, and the preemption counter's increase from the last
// sample before w0 (else the first in the window) to the last in the window, counting a
// counter reset as a restart from 0. It returns nil when no sample falls in the window.
func (s *Scraper) Summarize(w0, w1 int64) *record.ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SummarizeSamples(s.samples, w0, w1)
}

// SummarizeSamples is Summarize over samples (in time order).
func SummarizeSamples(samples []MetricSample, w0, w1 int64) *record.ServerStats {
	st := &record.ServerStats{}
	var (
		nRun, nWait int
		seen        = map[string]bool{}
		preempt     counterIncrease
		prefix      prefixWindow
		wt, wv      []float64 // the waiting count's samples: seconds from w0, requests
	)
	for i := range samples {
		m := &samples[i]
		if m.TUnixNS < w0 {
			preempt.before(m.Preemptions)
			prefix.before(m)
			continue
		}
		if m.TUnixNS >= w1 {
			break
		}
		st.Samples++
		for _, n := range m.series {
			seen[n] = true
		}
		if m.Running != nil {
			st.MeanRunning += *m.Running
			st.MaxRunning = max(st.MaxRunning, *m.Running)
			nRun++
		}
		if m.Waiting != nil {
			st.MeanWaiting += *m.Waiting
			st.MaxWaiting = max(st.MaxWaiting, *m.Waiting)
			nWait++
			wt, wv = append(wt, float64(m.TUnixNS-w0)/1e9), append(wv, *m.Waiting)
		}
		if m.KVUsage != nil {
			st.MaxKVUsage = max(st.MaxKVUsage, *m.KVUsage)
		}
		preempt.in(m.Preemptions)
		prefix.in(m)
	}
	if st.Samples == 0 {
		return nil
	}
	if nRun > 0 {
		st.MeanRunning /= float64(nRun)
	}
	if nWait > 0 {
		st.MeanWaiting /= float64(nWait)
	}
	if slope, resid, ok := lineTrend(wt, wv); ok {
		st.WaitingGrowthRPS, st.WaitingResidSD = &slope, &resid
	}
	if preempt.seen {
		st.Preemptions = preempt.increase
	}
	prefix.set(st)
	for n := range seen {
		st.Series = append(st.Series, n)
	}
	slices.Sort(st.Series)
	return st
}

// lineTrend fits y = a + b·x by least squares and returns the slope b and the residual
// standard deviation √(SSE ÷ (n − 2)); ok is false with fewer than 3 points or no spread in x.
func lineTrend(x, y []float64) (slope, resid float64, ok bool) {
	n := len(x)
	if n < 3 || slices.Min(x) == slices.Max(x) {
		return 0, 0, false
	}
	alpha, beta := stat.LinearRegression(x, y, nil, false)
	var sse float64
	for i := range x {
		r := y[i] - alpha - beta*x[i]
		sse += r * r
	}
	return beta, math.Sqrt(sse / float64(n-2)), true
}
