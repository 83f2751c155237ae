package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	openai "github.com/sashabaranov/go-openai"
)

// The DCGM exporter's families the simulated GPUs serve, with their Prometheus types
// (NVIDIA/dcgm-exporter etc/default-counters.csv; SM_ACTIVE from etc/dcp-metrics-included.csv).
var gpuFamilyTypes = map[string]dto.MetricType{
	"DCGM_FI_DEV_SM_CLOCK":                 dto.MetricType_GAUGE,
	"DCGM_FI_DEV_POWER_USAGE":              dto.MetricType_GAUGE,
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": dto.MetricType_COUNTER,
	"DCGM_FI_DEV_GPU_UTIL":                 dto.MetricType_GAUGE,
	"DCGM_FI_DEV_FB_USED":                  dto.MetricType_GAUGE,
	"DCGM_FI_PROF_SM_ACTIVE":               dto.MetricType_GAUGE,
}

// gpuScrape is one read of /metrics; sent and got bracket the instant the server read it.
type gpuScrape struct {
	sent, got time.Time
	fams      map[string]*dto.MetricFamily
}

func scrapeGPUs(t *testing.T, url string) gpuScrape {
	t.Helper()
	sc := gpuScrape{sent: time.Now()}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	sc.fams, err = parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sc.got = time.Now()
	return sc
}

// running is the scrape's vllm:num_requests_running.
func (sc gpuScrape) running() float64 {
	return sc.fams["vllm:num_requests_running"].GetMetric()[0].GetGauge().GetValue()
}

// perGPU returns family name's value on each GPU in index order, checking its type and each
// metric's labels against dcgm-exporter's (gpu, UUID, pci_bus_id, device, modelName, Hostname).
func (sc gpuScrape) perGPU(t *testing.T, name string, gpus int) []float64 {
	t.Helper()
	f := sc.fams[name]
	if f == nil || len(f.GetMetric()) != gpus || f.GetType() != gpuFamilyTypes[name] || f.GetHelp() == "" {
		t.Fatalf("%s: %v, want %d metrics of type %v with help", name, f, gpus, gpuFamilyTypes[name])
	}
	uuid := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	out := make([]float64, gpus)
	for i, m := range f.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		want := map[string]string{"gpu": fmt.Sprint(i), "UUID": gpuUUID(i), "pci_bus_id": fmt.Sprintf("00000000:%02X:00.0", i+1),
			"device": fmt.Sprintf("nvidia%d", i), "modelName": gpuModelName, "Hostname": gpuHostname}
		if fmt.Sprint(l) != fmt.Sprint(want) || !uuid.MatchString(l["UUID"]) {
			t.Errorf("%s metric %d labels %v, want %v", name, i, l, want)
		}
		out[i] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return out
}

// checkEnergy checks that every GPU's energy counter rose between scrapes a and b by the
// power p (W) over the interval between the server's two readings, which lies within
// [b.sent − a.got, b.got − a.sent]; the counter is in mJ.
func checkEnergy(t *testing.T, a, b gpuScrape, gpus int, p float64) {
	t.Helper()
	ea := a.perGPU(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpus)
	eb := b.perGPU(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpus)
	lo, hi := 1000*p*b.sent.Sub(a.got).Seconds(), 1000*p*b.got.Sub(a.sent).Seconds()
	const eps = 1e-6 // mJ: float rounding of the counters
	for i := range gpus {
		if d := eb[i] - ea[i]; d < lo-eps || d > hi+eps {
			t.Errorf("GPU %d: energy rose %.6f mJ, want %g W over the interval: [%.6f, %.6f] mJ", i, d, p, lo, hi)
		}
	}
}

// TestGPUIdle: an idle simulator's GPUs draw idle_w each, and each energy counter grows at
// idle_w, from 0 when the server started (DESIGN §6, GPU power).
func TestGPUIdle(t *testing.T) {
	const gpus, idle = 2, 120.0
	before := time.Now()
	_, url := newTestServer(t, Config{GPUs: gpus, Power: Power{IdleW: idle, MaxW: 700}})
	after := time.Now()
	a := scrapeGPUs(t, url)
	b := scrapeGPUs(t, url)
	for _, sc := range []gpuScrape{a, b} {
		for name, want := range map[string]float64{
			"DCGM_FI_DEV_POWER_USAGE": idle, "DCGM_FI_DEV_GPU_UTIL": 0, "DCGM_FI_PROF_SM_ACTIVE": 0,
			"DCGM_FI_DEV_FB_USED": gpuFBUsedMiB, "DCGM_FI_DEV_SM_CLOCK": gpuSMClockMHz,
		} {
			for i, v := range sc.perGPU(t, name, gpus) {
				if v != want {
					t.Errorf("%s GPU %d = %g, want %g", name, i, v, want)
				}
			}
		}
	}
	// The first reading is idle_w over the server's life so far, which began between before
	// and after.
	lo, hi := 1000*idle*a.sent.Sub(after).Seconds(), 1000*idle*a.got.Sub(before).Seconds()
	for i, e := range a.perGPU(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpus) {
		if e < lo-1e-6 || e > hi+1e-6 {
			t.Errorf("GPU %d: energy %.6f mJ since start, want within [%.6f, %.6f]", i, e, lo, hi)
		}
	}
	checkEnergy(t, a, b, gpus, idle)
	if gpuUUID(0) == gpuUUID(1) {
		t.Errorf("GPUs 0 and 1 share UUID %s", gpuUUID(0))
	}
}

// TestGPUPowerUnderLoad: with k requests held running, each GPU draws exactly
// idle_w + (max_w − idle_w) × min(k, S) ÷ S, where S is max_num_seqs (batching), fixed_slots
// (fixed mode, limited) or max_num_seqs again (fixed mode, unlimited: clamped), and its energy
// counter grows at that power.
func TestGPUPowerUnderLoad(t *testing.T) {
	const idle, maxW, slots = 120.0, 700.0, 8
	power := Power{IdleW: idle, MaxW: maxW}
	long := 100000 // output tokens: longer than the test, so that k stays running
	for _, tc := range []struct {
		name string
		cfg  Config
		k    int
	}{
		{"batching", Config{MaxNumSeqs: slots, StepBase: time.Millisecond, OutputDist: outputFixed, OutputTokens: long}, 3},
		{"fixed slots", Config{Profile: ProfileFixed, FixedSlots: slots, TTFT: time.Millisecond, ITL: 10 * time.Millisecond, OutputTokens: long}, 3},
		{"fixed unlimited", Config{Profile: ProfileFixed, MaxNumSeqs: slots, TTFT: time.Millisecond, ITL: 10 * time.Millisecond, OutputTokens: long}, 3},
		{"fixed unlimited over S", Config{Profile: ProfileFixed, MaxNumSeqs: slots, TTFT: time.Millisecond, ITL: 10 * time.Millisecond, OutputTokens: long}, slots + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const gpus = 2
			tc.cfg.GPUs, tc.cfg.Power = gpus, power
			srv, url := newTestServer(t, tc.cfg)
			if s := srv.Config().PowerSlots(); s != slots {
				t.Fatalf("PowerSlots = %d, want %d", s, slots)
			}
			hold(t, url, tc.k)
			a := waitRunning(t, url, tc.k)
			b := scrapeGPUs(t, url)
			if b.running() != float64(tc.k) {
				t.Fatalf("running fell to %g during the test, want %d held", b.running(), tc.k)
			}
			r := min(tc.k, slots)
			want := idle + (maxW-idle)*float64(r)/slots
			if got := srv.Config().GPUPowerW(float64(tc.k)); got != want {
				t.Errorf("GPUPowerW(%d) = %g, want %g", tc.k, got, want)
			}
			for _, sc := range []gpuScrape{a, b} {
				for name, w := range map[string]float64{"DCGM_FI_DEV_POWER_USAGE": want, "DCGM_FI_DEV_GPU_UTIL": 100,
					"DCGM_FI_PROF_SM_ACTIVE": float64(r) / slots} {
					for i, v := range sc.perGPU(t, name, gpus) {
						if v != w {
							t.Errorf("%s GPU %d = %g with %d running, want %g", name, i, v, tc.k, w)
						}
					}
				}
			}
			checkEnergy(t, a, b, gpus, want)
		})
	}
}

// hold opens k streams of long answers, held open (unread) until the test ends.
func hold(t *testing.T, url string, k int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := newClient(url)
	for range k {
		st, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Model: DefaultModel,
			Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "go on"}}, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
	}
}

// waitRunning polls /metrics until vllm:num_requests_running is k, for at most 10 s, and
// returns that scrape.
func waitRunning(t *testing.T, url string, k int) gpuScrape {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(10 * time.Second)
	for {
		sc := scrapeGPUs(t, url)
		if sc.running() == float64(k) {
			return sc
		}
		select {
		case <-tick.C:
		case <-limit:
			t.Fatalf("running %g after 10 s, want %d", sc.running(), k)
		}
	}
}

// TestGPUEnergyHistory: the energy counter integrates the running count's whole history, not
// the power seen at scrapes: between two idle scrapes, k requests ran for a while, so each
// counter rose by idle_w × Δt plus (max_w − idle_w) ÷ S × ∫ r dt, where ∫ r dt lies between
// k × (the time r was surely k) and k × (the time r could have been above 0). The running
// count is polled in-process, so that no scrape sees the requests.
func TestGPUEnergyHistory(t *testing.T) {
	const idle, maxW, slots, k, tokens = 120.0, 700.0, 4, 2, 30
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"batching", Config{MaxNumSeqs: slots, StepBase: time.Millisecond, OutputDist: outputFixed, OutputTokens: 100000}},
		{"fixed slots", Config{Profile: ProfileFixed, FixedSlots: slots, TTFT: time.Millisecond, ITL: 2 * time.Millisecond, OutputTokens: 100000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const gpus = 1
			tc.cfg.GPUs, tc.cfg.Power = gpus, Power{IdleW: idle, MaxW: maxW}
			srv, url := newTestServer(t, tc.cfg)
			a := scrapeGPUs(t, url)
			opened := time.Now()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := newClient(url)
			streams := make([]*openai.ChatCompletionStream, k)
			for i := range streams {
				st, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Model: DefaultModel,
					Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "go on"}}, Stream: true})
				if err != nil {
					t.Fatal(err)
				}
				streams[i] = st
			}
			waitStats(t, srv, k)
			full := time.Now() // r = k from before here …
			for _, st := range streams {
				for n := 0; n < tokens; {
					resp, err := st.Recv()
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Choices) > 0 && resp.Choices[0].Delta.Content != "" {
						n++
					}
				}
			}
			closed := time.Now() // … until after here
			cancel()
			for _, st := range streams {
				st.Close()
			}
			waitStats(t, srv, 0)
			z := scrapeGPUs(t, url)
			perRun := (maxW - idle) / slots * k // W above idle while k run
			lo := 1000 * (idle*z.sent.Sub(a.got).Seconds() + perRun*closed.Sub(full).Seconds())
			hi := 1000 * (idle*z.got.Sub(a.sent).Seconds() + perRun*z.got.Sub(opened).Seconds())
			ea := a.perGPU(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpus)[0]
			ez := z.perGPU(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpus)[0]
			if d := ez - ea; d < lo-1e-6 || d > hi+1e-6 {
				t.Errorf("energy rose %.3f mJ, want within [%.3f, %.3f] (idle %g W, +%g W for %v to %v)",
					d, lo, hi, idle, perRun, closed.Sub(full), z.got.Sub(opened))
			}
		})
	}
}

// waitStats polls the server's running count until it is k, for at most 10 s.
func waitStats(t *testing.T, srv *Server, k int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	limit := time.After(10 * time.Second)
	for srv.Stats().Running != k {
		select {
		case <-tick.C:
		case <-limit:
			t.Fatalf("running %d after 10 s, want %d", srv.Stats().Running, k)
		}
	}
}

// TestGPUsOff: without gpus /metrics serves no DCGM family, even with power set.
func TestGPUsOff(t *testing.T) {
	_, url := newTestServer(t, Config{Power: Power{IdleW: 50, MaxW: 60}})
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "vllm:num_requests_running") || strings.Contains(string(body), "DCGM_") {
		t.Errorf("/metrics without gpus:\n%s", body)
	}
}

// TestGPUConfig: gpus and power overlay any profile, the power defaults to DefaultIdleW and
// DefaultMaxW with GPUs and nothing set, and invalid values are errors naming their key.
func TestGPUConfig(t *testing.T) {
	for _, tc := range []struct {
		in   Config
		want Power
	}{
		{Config{Profile: ProfileDemo, GPUs: 1, Power: Power{IdleW: 120, MaxW: 700}}, Power{120, 700}},
		{Config{Profile: ProfileSeedArticle, GPUs: 8}, Power{DefaultIdleW, DefaultMaxW}},
		{Config{GPUs: 1, Power: Power{MaxW: 300}}, Power{0, 300}},
		{Config{Power: Power{IdleW: 50, MaxW: 60}}, Power{50, 60}},
		{Config{}, Power{}},
	} {
		c, err := Resolve(tc.in)
		if err != nil {
			t.Errorf("Resolve(%+v): %v", tc.in, err)
			continue
		}
		if c.GPUs != tc.in.GPUs || c.Power != tc.want {
			t.Errorf("Resolve(gpus %d power %+v) = gpus %d power %+v, want power %+v", tc.in.GPUs, tc.in.Power, c.GPUs, c.Power, tc.want)
		}
	}
	for _, tc := range []struct {
		in   Config
		want []string
	}{
		{Config{GPUs: 65}, []string{"sim: gpus: 65 must be in [0, 64]"}},
		{Config{GPUs: -1}, []string{"sim: gpus: -1 must be in [0, 64]"}},
		{Config{GPUs: 1, Power: Power{IdleW: 300, MaxW: 200}}, []string{"sim: power.max_w: 200 must be a finite number of watts ≥ power.idle_w (300)"}},
		{Config{GPUs: 1, Power: Power{IdleW: -5, MaxW: 700}}, []string{"sim: power.idle_w: -5 must be a finite number of watts ≥ 0"}},
		{Config{GPUs: 1, Power: Power{IdleW: math.NaN(), MaxW: math.Inf(1)}}, []string{"sim: power.idle_w: NaN", "sim: power.max_w: +Inf"}},
	} {
		_, err := Resolve(tc.in)
		if err == nil {
			t.Errorf("Resolve(gpus %d power %+v) accepted", tc.in.GPUs, tc.in.Power)
			continue
		}
		var joined interface{ Unwrap() []error }
		if !errors.As(err, &joined) || len(joined.Unwrap()) != len(tc.want) {
			t.Errorf("Resolve(gpus %d power %+v) = %v, want %d problems", tc.in.GPUs, tc.in.Power, err, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if got := joined.Unwrap()[i].Error(); !strings.HasPrefix(got, w) {
				t.Errorf("problem %d = %q, want it to start %q", i, got, w)
			}
		}
	}
}
