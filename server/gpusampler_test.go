package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// fakeExporter serves DCGM text at /metrics over loopback HTTP: one GPU at 200 W whose energy
// counter rises 1,000 mJ with every request, so consecutive readings differ by exactly 1 J;
// /fail answers 500. extra is served after the GPU's families.
func fakeExporter(t *testing.T, extra string) *httptest.Server {
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		fmt.Fprintf(w, `# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-x",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7"} 200
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-x",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7"} %d
%s`, 5_000_000+1000*k, extra)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// The sampler over real loopback HTTP: readings every interval, recorded as JSON lines, the
// idle reading over three of them (2 J by the exporter's counter), the URL's token never shown.
func TestGPUSamplerHTTP(t *testing.T) {
	srv := fakeExporter(t, "")
	s, err := NewGPUSampler(GPUSamplerOptions{URLs: []string{srv.URL + "/metrics?token=hunter2"}, Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.From(), "hunter2") || s.Source() != "dcgm" {
		t.Errorf("From %q (must not show the token), source %q", s.From(), s.Source())
	}
	var buf bytes.Buffer
	s.Record(&buf)
	stop := s.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	idle := s.Idle(ctx, 3)
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if idle == nil || idle.EnergyJ == nil {
		t.Fatalf("idle %+v, want a reading with energy", idle)
	}
	near(t, "idle energy", *idle.EnergyJ, 2)
	near(t, "idle power", idle.PowerMeanW, 200)
	if idle.Samples != 2 || idle.EnergySource != "counter" || idle.From != s.From() || len(idle.GPUs) != 1 || idle.GPUs[0].Host != "node-7" {
		t.Errorf("idle %+v", idle)
	}
	lines := 0
	for sc := bufio.NewScanner(&buf); sc.Scan(); lines++ {
		var g GPUSample
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil || g.TUnixNS == 0 || len(g.GPUs) != 1 || g.GPUs[0].EnergyMJ == nil {
			t.Fatalf("line %d %q: %+v, %v", lines+1, sc.Text(), g, err)
		}
	}
	if lines != len(s.Samples()) || lines < 3 {
		t.Errorf("%d lines recorded, %d samples kept", lines, len(s.Samples()))
	}
}

// A source that fails is counted and reported at stop; the others' GPUs are still read.
func TestGPUSamplerFailingSource(t *testing.T) {
	srv := fakeExporter(t, "")
	s, err := NewGPUSampler(GPUSamplerOptions{URLs: []string{srv.URL + "/metrics", srv.URL + "/fail"}})
	if err != nil {
		t.Fatal(err)
	}
	sample, err := s.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "500") || len(sample.GPUs) != 1 {
		t.Errorf("read %+v, %v; want GPU x and the 500", sample, err)
	}
	if n, _ := s.Errors(); n != 1 || len(s.Samples()) != 1 {
		t.Errorf("%d errors, %d samples; want 1, 1", n, len(s.Samples()))
	}
	if _, err := NewGPUSampler(GPUSamplerOptions{URLs: []string{"ftp://x/metrics"}}); err == nil {
		t.Error("ftp URL accepted")
	}
}

// The server's metrics scrape feeds the GPU sampler the DCGM families of the same body: one
// request, the same time.
func TestScraperFeedsGPU(t *testing.T) {
	srv := fakeExporter(t, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")
	sc, err := NewScraper(ServerMetricsConfig{URL: srv.URL + "/metrics"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGPUSampler(GPUSamplerOptions{Fed: srv.URL + "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	sc.FeedGPU(g)
	m, err := sc.Scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := g.Samples()
	if len(got) != 1 || got[0].TUnixNS != m.TUnixNS || len(got[0].GPUs) != 1 || deref(got[0].GPUs[0].EnergyMJ) != "5.001e+06" {
		t.Errorf("GPU samples %+v, want one at the scrape's time with counter 5001000", got)
	}
	if deref(m.Running) != "3" {
		t.Errorf("running %s, want 3", deref(m.Running))
	}
}

// A reading whose GPUs' energy counters did not move since the last kept one repeats the
// DCGM exporter's cached values (it refreshes every -c ms, 30 s by default): it is dropped
// and counted, not kept with its own fetch time; a moved counter, or a source without one,
// is kept.
func TestGPUSamplerDropsStaleReadings(t *testing.T) {
	s, err := NewGPUSampler(GPUSamplerOptions{Fed: "http://x/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	v := func(mj, w float64) GPUValue {
		return GPUValue{GPU: record.GPU{Index: "0", UUID: "GPU-1"}, EnergyMJ: &mj, PowerW: &w}
	}
	noCounter := GPUValue{GPU: record.GPU{Index: "0", UUID: "GPU-1"}}
	for i, g := range []GPUValue{v(1000, 300), v(1000, 300), v(1000, 310), v(4000, 300), noCounter, noCounter} {
		s.add(GPUSample{TUnixNS: int64(i+1) * 1e9, GPUs: []GPUValue{g}})
	}
	if got, stale := len(s.Samples()), s.Stale(); got != 4 || stale != 2 {
		t.Errorf("kept %d readings, dropped %d; want 4 kept (1000, 4000 and both without a counter), 2 stale", got, stale)
	}
}
