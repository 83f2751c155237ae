package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
)

// Exposition excerpts in the formats of vLLM (prometheus_client: a counter's TYPE line names
// the family, its sample carries _total), SGLang and llama.cpp's server.
const (
	vllmText = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="llama"} 5.0
vllm:num_requests_running{engine="1",model_name="llama"} 3.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama"} 2.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="llama"} 0.25
# HELP vllm:num_preemptions Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{engine="0",model_name="llama"} %d
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{model_name="llama"} 12345
`
	sglangText = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen"} 7.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="qwen"} 4.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="qwen"} 0.5
`
	llamacppText = `# HELP llamacpp:requests_processing Number of request processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.375
`
)

func TestParseMetricsEngines(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name                   string
		text                   string
		run, wait, kv, preempt *float64
	}{
		{"vllm", strings.Replace(vllmText, "%d", "9", 1), f(8), f(2), f(0.25), f(9)},
		{"sglang", sglangText, f(7), f(4), f(0.5), nil},
		{"llamacpp", llamacppText, f(2), f(1), f(0.375), nil},
		// An older llama-server without the KV gauge: KV usage not measured (nil), never 0.
		{"llamacpp-no-kv", llamacppText[:strings.Index(llamacppText, "# HELP llamacpp:kv")], f(2), f(1), nil, nil},
	}
	eq := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	for _, tt := range tests {
		m, err := parseMetrics(strings.NewReader(tt.text))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !eq(m.Running, tt.run) || !eq(m.Waiting, tt.wait) || !eq(m.KVUsage, tt.kv) || !eq(m.Preemptions, tt.preempt) {
			t.Errorf("%s: got %+v", tt.name, m)
		}
	}
	if _, err := parseMetrics(strings.NewReader("vllm:x{ 1\n")); err == nil {
		t.Error("malformed text: want error")
	}
}

func TestScraperRunSummarizeWrite(t *testing.T) {
	var n atomic.Int64
	reached := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		if k == 8 {
			close(reached)
		}
		if k == 3 {
			http.Error(w, "boom", 500) // one failed scrape: counted, not fatal
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(strings.Replace(vllmText, "%d", map[bool]string{true: "10", false: "1"}[k%2 == 0], 1)))
	}))
	defer srv.Close()
	s, err := NewScraper(ServerMetricsConfig{URL: srv.URL + "/metrics", Interval: 5 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var buf bytes.Buffer
	s.Record(&buf)
	go func() { done <- s.Run(ctx) }()
	<-reached
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	samples := s.Samples()
	if errs, last := s.Errors(); errs != 1 || last == nil || len(samples) < 6 {
		t.Fatalf("errors %d (%v), samples %d", errs, last, len(samples))
	}
	st := s.Summarize(samples[0].TUnixNS, samples[len(samples)-1].TUnixNS+1)
	if st == nil || st.Samples != len(samples) || st.MeanRunning != 8 || st.MaxRunning != 8 || st.MeanWaiting != 2 || st.MaxWaiting != 2 || st.MaxKVUsage != 0.25 {
		t.Fatalf("summary %+v", st)
	}
	// The counter alternates 1, 10, 1, ... (a reset each other scrape): each reset restarts
	// from 0, so the increase is 9 per rise plus 1 per reset.
	var want float64
	for i := 1; i < len(samples); i++ {
		p, q := *samples[i-1].Preemptions, *samples[i].Preemptions
		if q >= p {
			want += q - p
		} else {
			want += q
		}
	}
	if st.Preemptions != want || want == 0 {
		t.Errorf("preemptions %g, want %g", st.Preemptions, want)
	}
	if s.Summarize(0, 1) != nil {
		t.Error("empty window: want nil")
	}
	if err := s.RecordErr(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	lines := 0
	for sc.Scan() {
		var m map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"t_unix_ns", "running", "waiting", "kv_usage", "preemptions"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d lacks %s: %s", lines, k, sc.Text())
			}
		}
		lines++
	}
	if lines != len(samples) {
		t.Errorf("%d lines for %d samples", lines, len(samples))
	}
}

func TestNewScraperValidates(t *testing.T) {
	for _, u := range []string{"", "ftp://x/metrics", "::"} {
		if _, err := NewScraper(ServerMetricsConfig{URL: u}, nil); err == nil {
			t.Errorf("url %q: want error", u)
		}
	}
}

// TestScraperAgainstSimulator scrapes the simulator's /metrics (vLLM series names) while a
// request holds a decode slot: running must read 1. The fixed engine has no KV cache, so it
// exposes no KV usage: the sample has none (not 0).
func TestScraperAgainstSimulator(t *testing.T) {
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT = time.Minute // the request stays in flight until the test cancels it
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer func() { srv.Close(); s.Close() }()
	sc, err := NewScraper(ServerMetricsConfig{URL: srv.URL + "/metrics", Interval: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"model":"` + sim.DefaultModel + `","prompt":"a b c","max_tokens":4,"stream":true}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m MetricSample
	// Admission is asynchronous: poll the real endpoint until it shows the request.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if m, err = sc.Scrape(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m.Running != nil && *m.Running == 1 {
			break
		}
	}
	if m.Running == nil || *m.Running != 1 || m.Waiting == nil || m.KVUsage != nil || m.Preemptions == nil {
		t.Fatalf("sample %+v", m)
	}
	st := sc.Summarize(0, time.Now().Add(time.Hour).UnixNano())
	if st == nil || !slices.Contains(st.Series, "vllm:num_requests_running") || slices.Contains(st.Series, "vllm:kv_cache_usage_perc") {
		t.Fatalf("summary %+v", st)
	}
}

// TestSummarizeExposes: a window's summary says which quantities the server exposed, so that
// a KV usage the server lacks is "not measured", not 0 (llama.cpp without its KV gauge,
// SGLang without a preemption counter), and keeps the largest running count.
func TestSummarizeExposes(t *testing.T) {
	var samples []MetricSample
	for i, text := range []string{sglangText, strings.Replace(sglangText, "num_running_reqs{model_name=\"qwen\"} 7.0", "num_running_reqs{model_name=\"qwen\"} 9.0", 1)} {
		m, err := parseMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		m.TUnixNS = int64(i + 1)
		samples = append(samples, m)
	}
	st := SummarizeSamples(samples, 0, 10)
	if st == nil || st.MeanRunning != 8 || st.MaxRunning != 9 {
		t.Fatalf("summary %+v: want mean running 8, max 9", st)
	}
	for q, want := range map[record.MetricQuantity]bool{record.MetricRunning: true, record.MetricWaiting: true, record.MetricKVUsage: true, record.MetricPreemptions: false} {
		if st.Exposes(q) != want {
			t.Errorf("Exposes(%d) = %v, want %v (series %v)", q, !want, want, st.Series)
		}
	}
	m, err := parseMetrics(strings.NewReader(llamacppText[:strings.Index(llamacppText, "# HELP llamacpp:kv")]))
	if err != nil {
		t.Fatal(err)
	}
	m.TUnixNS = 1
	if st := SummarizeSamples([]MetricSample{m}, 0, 10); st.Exposes(record.MetricKVUsage) || !st.Exposes(record.MetricRunning) {
		t.Errorf("llama.cpp without its KV gauge: %+v", st)
	}
	if (*record.ServerStats)(nil).Exposes(record.MetricRunning) {
		t.Error("nil stats expose nothing")
	}
}

// TestSummarizeWaitingGrowth: the waiting count's trend over the window's samples — a queue
// growing 2 requests/s, sampled every 500 ms with ±1 alternating noise, has the slope 2 −
// 0.1212 (least squares over x = 0, 0.5, …, 4.5 s: the alternation adds Σ(x − x̄)e ÷ Σ(x −
// x̄)² = −2.5 ÷ 20.625) and a residual standard deviation of about 1; samples outside the window do not count; fewer than 3 in it leave the
// trend unmeasured (nil).
func TestSummarizeWaitingGrowth(t *testing.T) {
	const s = int64(time.Second)
	var samples []MetricSample
	for i := -2; i < 14; i++ {
		w := 2*0.5*float64(i) + float64(1-2*(i&1))
		if i < 0 || i >= 10 {
			w = 1000 // outside the window
		}
		samples = append(samples, MetricSample{TUnixNS: 100*s + int64(i)*s/2, Waiting: &w})
	}
	st := SummarizeSamples(samples, 100*s, 105*s)
	if st == nil || st.WaitingGrowthRPS == nil || st.WaitingResidSD == nil {
		t.Fatalf("summary %+v: want the waiting trend", st)
	}
	if g, r := *st.WaitingGrowthRPS, *st.WaitingResidSD; math.Abs(g-1.8788) > 1e-4 || math.Abs(r-1) > 0.15 {
		t.Errorf("waiting growth %.4f requests/s, residual %.3f: want 1.8788 and about 1", g, r)
	}
	if st := SummarizeSamples(samples[2:4], 100*s, 105*s); st == nil || st.WaitingGrowthRPS != nil {
		t.Errorf("two samples: %+v, want no trend", st)
	}
}
