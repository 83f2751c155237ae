package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
)

// GPUSampler keeps timestamped readings of the GPUs serving the target (DESIGN §3.10): read
// every interval from DCGM exporter endpoints or nvidia-smi (Start), or fed by the server
// metrics Scraper that finds the DCGM families in its own scrape (Scraper.FeedGPU). Each
// reading is appended to Record's writer (gpu_metrics.jsonl) as it is taken; SummarizeGPU
// summarises a window and may be called concurrently with the sampling. Failed reads are
// counted, never fatal.
type GPUSampler struct {
	source   string // record.GPUFromDCGM or record.GPUFromNvidiaSMI
	from     string // where the readings come from, without credentials
	readers  []gpuReader
	match    GPUMatch
	interval time.Duration

	mu      sync.Mutex
	samples []GPUSample
	errors  int
	lastErr error
	added   chan struct{} // closed (and replaced) when a reading is kept
	stale   int           // readings dropped as repeats of the last one kept (stale)

	lines jsonLines // Record's writer of gpu_metrics.jsonl
}

// gpuReader reads the GPUs of one source once.
type gpuReader interface {
	read(ctx context.Context) ([]GPUValue, error)
}

// GPUSamplerOptions configures a GPUSampler: NvidiaSMI, else URLs, else fed by a Scraper.
type GPUSamplerOptions struct {
	// NvidiaSMI samples `nvidia-smi --query-gpu=…` on this machine; NvidiaSMICmd is the
	// program run ("" is nvidia-smi on the PATH).
	NvidiaSMI    bool
	NvidiaSMICmd string
	// URLs are DCGM exporter endpoints, read in turn at each reading.
	URLs []string
	// Fed names the scrape that feeds the sampler (Scraper.FeedGPU) when there are no URLs
	// and no nvidia-smi: the server's metrics URL.
	Fed string
	// Match selects the GPUs counted (nil: all).
	Match GPUMatch
	// Interval is the sampling interval (fed: the scrape's); ≤ 0 means 1 s.
	Interval time.Duration
	// Timeout bounds one read of one source; ≤ 0 means max(Interval, 2 s).
	Timeout time.Duration
}

// NewGPUSampler returns a GPUSampler for o; an URL that is not http(s) is an error.
func NewGPUSampler(o GPUSamplerOptions) (*GPUSampler, error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = max(o.Interval, 2*time.Second)
	}
	s := &GPUSampler{source: record.GPUFromDCGM, match: o.Match, interval: o.Interval,
		added: make(chan struct{}), lines: jsonLines{what: "GPU metrics"}}
	switch {
	case o.NvidiaSMI:
		cmd := o.NvidiaSMICmd
		if cmd == "" {
			cmd = GPUSourceNvidiaSMI
		}
		host, _ := os.Hostname()
		s.source, s.from = record.GPUFromNvidiaSMI, GPUSourceNvidiaSMI
		s.readers = []gpuReader{smiReader{cmd: cmd, host: host, match: o.Match, timeout: o.Timeout}}
	case len(o.URLs) > 0:
		hc := &http.Client{Timeout: o.Timeout}
		var shown []string
		for _, u := range o.URLs {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
				return nil, fmt.Errorf("gpu metrics: url %q is not an http(s) URL", redact.URL(u))
			}
			shown = append(shown, redact.URL(u))
			s.readers = append(s.readers, dcgmReader{url: u, shown: redact.URL(u), hc: hc, match: o.Match})
		}
		s.from = strings.Join(shown, ", ")
	default:
		s.from = redact.URL(o.Fed)
	}
	return s, nil
}

// dcgmReader reads a DCGM exporter's Prometheus text.
type dcgmReader struct {
	url, shown string
	hc         *http.Client
	match      GPUMatch
}

func (r dcgmReader) read(ctx context.Context) ([]GPUValue, error) {
	fams, err := getFamilies(ctx, r.hc, r.url, r.shown)
	if err != nil {
		return nil, err
	}
	return dcgmGPUs(fams, r.match), nil
}

// Source is record.GPUFromDCGM or record.GPUFromNvidiaSMI.
func (s *GPUSampler) Source() string { return s.source }

// From names where the readings come from: the URLs without credentials, or nvidia-smi.
func (s *GPUSampler) From() string { return s.from }

// Probe reads every source once, keeping nothing: the GPUs it reads that Match selects.
// A fed sampler has nothing to read: nil, nil.
func (s *GPUSampler) Probe(ctx context.Context) ([]GPUValue, error) {
	sample, err := s.readAll(ctx)
	return sample.GPUs, err
}

// readAll reads every source in turn; the reading's time is the midpoint of the reads. A GPU
// two sources give (the same host and UUID) is kept once. The error joins the failed reads'.
func (s *GPUSampler) readAll(ctx context.Context) (GPUSample, error) {
	t0 := time.Now()
	var (
		gs   []GPUValue
		errs []error
		seen = map[string]bool{}
	)
	for _, r := range s.readers {
		got, err := r.read(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, g := range got {
			if k := g.key(); !seen[k] {
				seen[k] = true
				gs = append(gs, g)
			}
		}
	}
	sortGPUs(gs)
	return GPUSample{TUnixNS: t0.Add(time.Since(t0) / 2).UnixNano(), GPUs: gs}, errors.Join(errs...)
}

// Read reads every source once and keeps the reading (Probe's, kept); a read that fails is
// counted and, when no source answered, returned.
func (s *GPUSampler) Read(ctx context.Context) (GPUSample, error) {
	sample, err := s.readAll(ctx)
	if err != nil && ctx.Err() == nil {
		s.mu.Lock()
		s.errors++
		s.lastErr = err
		s.mu.Unlock()
	}
	s.add(sample)
	return sample, err
}

// add keeps a reading that holds a GPU and is not a repeat (stale), wakes the waiters and
// records it.
func (s *GPUSampler) add(sample GPUSample) {
	if len(sample.GPUs) == 0 {
		return
	}
	s.mu.Lock()
	if n := len(s.samples); n > 0 && stale(&s.samples[n-1], &sample) {
		s.stale++
		s.mu.Unlock()
		return
	}
	s.samples = append(s.samples, sample)
	close(s.added)
	s.added = make(chan struct{})
	s.mu.Unlock()
	s.lines.write(&sample)
}

// Start reads every interval in a goroutine until ctx is done or stop is called (a fed
// sampler reads nothing itself); stop waits for it and reports the reads that failed and any
// error writing the readings (Record).
func (s *GPUSampler) Start(ctx context.Context) (stop func() error) {
	end := func() {}
	if len(s.readers) > 0 {
		end = startLoop(ctx, func(ctx context.Context) {
			runEvery(ctx, s.interval, func(ctx context.Context) { _, _ = s.Read(ctx) })
		})
	}
	return func() error {
		end()
		n, last := s.Errors()
		return loopErr("GPU readings", n, len(s.Samples()), last, s.lines.Err())
	}
}

// Interval is the sampling interval (a fed sampler's is its scrape's).
func (s *GPUSampler) Interval() time.Duration { return s.interval }

// Record writes every later reading to w, one JSON object per line (gpu_metrics.jsonl), as
// it is taken. The first write error ends the recording (sampling goes on) and is reported
// by Start's stop.
func (s *GPUSampler) Record(w io.Writer) { s.lines.set(w) }

// Errors returns the number of failed reads and the last failure.
func (s *GPUSampler) Errors() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors, s.lastErr
}

// Samples returns a copy of the readings kept so far, in time order.
func (s *GPUSampler) Samples() []GPUSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// wait waits until n readings taken at or after since are kept, or ctx is done, and returns
// those kept by then.
func (s *GPUSampler) wait(ctx context.Context, since int64, n int) []GPUSample {
	for {
		s.mu.Lock()
		i, _ := slices.BinarySearchFunc(s.samples, since, func(g GPUSample, t int64) int {
			return cmp.Compare(g.TUnixNS, t)
		})
		got, added := slices.Clone(s.samples[i:]), s.added
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ctx.Done():
			return got
		case <-added:
		}
	}
}

// SummarizeGPU summarises the readings of the window [w0, w1) (SummarizeGPU) with the
// sampler's source. It first waits, at most two intervals and a second and no longer than ctx,
// for a reading at or after w1, which the energy of the window's end is interpolated from.
func (s *GPUSampler) SummarizeGPU(ctx context.Context, w0, w1 int64) *record.GPUStats {
	ctx, cancel := context.WithTimeout(ctx, 2*s.interval+time.Second)
	defer cancel()
	s.wait(ctx, w1, 1)
	s.mu.Lock()
	st := SummarizeGPU(s.samples, w0, w1)
	s.mu.Unlock()
	if st != nil {
		st.Source, st.From = s.source, s.from
	}
	return st
}

// Idle takes the idle reading before the first level: it waits, bounded by ctx, for n ≥ 2
// readings from now and summarises the window from the first of them to the last (whose
// reading closes the window's energy); nil when fewer than 2 came.
func (s *GPUSampler) Idle(ctx context.Context, n int) *record.GPUStats {
	got := s.wait(ctx, time.Now().UnixNano(), max(n, 2))
	if len(got) < 2 {
		return nil
	}
	return s.SummarizeGPU(ctx, got[0].TUnixNS, got[len(got)-1].TUnixNS)
}

// stale reports whether next repeats last: the same GPUs, each with an energy counter that
// did not move. The DCGM exporter refreshes its values every collect interval (its -c
// option, 30 s by default) and serves the cached ones in between; a reading that repeats
// them, stamped with its own fetch time, would flatten the counter's interpolation and
// inflate the readings count. A GPU's counter only stands still when no time passed for
// it (a source without a counter, nvidia-smi, is never stale).
func stale(last, next *GPUSample) bool {
	if len(last.GPUs) != len(next.GPUs) {
		return false
	}
	for i, g := range next.GPUs {
		l := last.GPUs[i]
		if g.key() != l.key() || g.EnergyMJ == nil || l.EnergyMJ == nil || *g.EnergyMJ != *l.EnergyMJ {
			return false
		}
	}
	return true
}

// Stale returns the number of readings dropped as repeats of the last one kept (stale).
func (s *GPUSampler) Stale() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stale
}
