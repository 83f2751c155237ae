package sim

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// BenchmarkServer streams many concurrent requests over loopback through a batching engine
// with 256 slots and ~100 µs steps (step_per_seq 1 ns: a zero would keep the preset's
// 250 µs); it reports streamed tokens per second.
func BenchmarkServer(b *testing.B) {
	srv, url := newTestServer(b, Config{MaxNumSeqs: 256, StepBase: 100 * time.Microsecond, StepPerSeq: time.Nanosecond, PrefillTPS: 1e9, OutputDist: outputFixed})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	body := `{"prompt":"a b c","max_tokens":16,"stream":true}`
	b.SetParallelism(128) // 128 × GOMAXPROCS concurrent streams
	b.ReportAllocs()
	var failed atomic.Int64
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := hc.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				failed.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(srv.Stats().GenerationTokens)/time.Since(start).Seconds(), "tokens/s")
	if failed.Load() > 0 {
		b.Fatalf("%d requests failed", failed.Load())
	}
}

// TestMetricsParse: /metrics parses as Prometheus text and matches Stats.
func TestMetricsParse(t *testing.T) {
	srv, url := newTestServer(t, Config{StepBase: time.Millisecond, KVCacheTokens: 1000})
	if _, err := newClient(url).CreateChatCompletion(context.Background(), chatReq(3, false)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	for name, want := range map[string]float64{
		"vllm:generation_tokens_total": float64(st.GenerationTokens),
		"vllm:prompt_tokens_total":     float64(st.PromptTokens),
		"vllm:num_requests_running":    0,
		"vllm:num_requests_waiting":    0,
		"vllm:kv_cache_usage_perc":     0,
		"vllm:num_preemptions_total":   0,
	} {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) != 1 {
			t.Errorf("%s missing", name)
			continue
		}
		m := f.GetMetric()[0]
		v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if v != want || m.GetLabel()[0].GetName() != "model_name" || m.GetLabel()[0].GetValue() != DefaultModel {
			t.Errorf("%s = %v %v, want %v with model_name", name, v, m.GetLabel(), want)
		}
	}
	if st.GenerationTokens != 3 || st.PromptTokens != 6 {
		t.Errorf("stats %+v, want 3 generation, 6 prompt tokens", st)
	}
}
