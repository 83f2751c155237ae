package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sim"
)

// serveSim serves the simulator in fixed mode over loopback: TTFT, then one chunk every ITL.
func serveSim(t *testing.T, ttft, itl time.Duration, tokens int) *httptest.Server {
	t.Helper()
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT, cfg.ITL, cfg.TokensPerChunk, cfg.OutputTokens = ttft, itl, 1, tokens
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv
}

// TestFloorClient checks the floor client against the simulator: every content chunk
// counted (the role chunk and the usage chunk are not), offsets sorted, TTFT ≥ the
// configured TTFT and E2E ≥ TTFT + (n−1)·ITL (the simulator's schedule, sim/profile.go), and
// the connection reused by the next request.
func TestFloorClient(t *testing.T) {
	const (
		ttft   = 20 * time.Millisecond
		itl    = 2 * time.Millisecond
		tokens = 8
	)
	srv := serveSim(t, ttft, itl, tokens)
	fc, err := newFloorClient(srv.URL+"/v1", sim.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.close()
	for i := range 3 {
		var rec record.Record
		fc.Do(context.Background(), &record.Request{Prompt: "a b c", PromptTokens: 3, MaxTokens: tokens}, &rec)
		if rec.Status != record.StatusOK || rec.OutputTokens != tokens || len(rec.Chunks) != tokens {
			t.Fatalf("request %d: %s %q, %d tokens, %d chunks", i, rec.Status, rec.Error, rec.OutputTokens, len(rec.Chunks))
		}
		for j := 1; j < len(rec.Chunks); j++ {
			if rec.Chunks[j] < rec.Chunks[j-1] {
				t.Fatalf("chunk offsets not sorted: %v", rec.Chunks)
			}
		}
		if rec.TTFT < ttft || rec.E2E < ttft+(tokens-1)*itl {
			t.Errorf("request %d: TTFT %v, E2E %v; want ≥ %v and ≥ %v", i, rec.TTFT, rec.E2E, ttft, ttft+(tokens-1)*itl)
		}
		fc.mu.Lock()
		idle := len(fc.idle)
		fc.mu.Unlock()
		if idle != 1 {
			t.Fatalf("after request %d: %d idle connections, want 1 (kept alive)", i, idle)
		}
	}
}

// TestFloorClientCancelled checks that a cancelled request returns cancelled and does not
// keep its connection.
func TestFloorClientCancelled(t *testing.T) {
	srv := serveSim(t, 10*time.Second, time.Millisecond, 4)
	fc, err := newFloorClient(srv.URL+"/v1", sim.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan record.Record)
	go func() {
		var rec record.Record
		fc.Do(ctx, &record.Request{Prompt: "a", PromptTokens: 1, MaxTokens: 4}, &rec)
		done <- rec
	}()
	cancel()
	rec := <-done
	if rec.Status != record.StatusCancelled {
		t.Fatalf("status %s (%s), want cancelled", rec.Status, rec.Error)
	}
	if len(fc.idle) != 0 {
		t.Fatalf("%d idle connections after a cancelled request", len(fc.idle))
	}
}

// TestReportMisses checks that the report fails a level over a target and names it.
func TestReportMisses(t *testing.T) {
	cfg := config{ttft: 500 * time.Millisecond, itl: 100 * time.Millisecond, outputTokens: 32}
	good := row{streams: 1024, achieved: 1024, tokens: 1e5, cpu: 500 * time.Millisecond, rssPerStream: 40 << 10, ttft: 500.5, tpot: 100}
	slow := good
	slow.cpu = 2 * time.Second // 20 µs per token
	var b strings.Builder
	if miss := report(&b, cfg, []row{good}, nil, time.Minute); len(miss) != 0 {
		t.Fatalf("misses %v for a level within every target:\n%s", miss, b.String())
	}
	b.Reset()
	miss := report(&b, cfg, []row{slow}, []row{good}, time.Minute)
	if len(miss) != 1 || !strings.Contains(miss[0], "20.00 µs/token") || !strings.Contains(miss[0], "floor client 5.00") {
		t.Fatalf("misses %q, want the CPU target with the floor:\n%s", miss, b.String())
	}
}

// TestReportMemory checks the memory targets: the slope of peak RSS over the levels always,
// the average per stream only from memoryMinStreams up.
func TestReportMemory(t *testing.T) {
	cfg := config{ttft: 500 * time.Millisecond, itl: 100 * time.Millisecond, outputTokens: 32}
	lvl := func(streams int, kib float64) row {
		return row{streams: streams, achieved: float64(streams), tokens: 1e6, cpu: time.Second,
			rssPerStream: kib * 1024, ttft: 500.5, tpot: 100}
	}
	// 256 streams at 70 KiB and 1,024 at 60 KiB: 17.5 + 60 MiB, a slope of 56.7 KiB per stream.
	var b strings.Builder
	if miss := report(&b, cfg, []row{lvl(256, 70), lvl(1024, 60)}, nil, time.Minute); len(miss) != 0 {
		t.Fatalf("misses %v, want none (256 streams is below memoryMinStreams):\n%s", miss, b.String())
	}
	if !strings.Contains(b.String(), "slope of peak RSS over the levels) 56.7 KiB") {
		t.Errorf("report does not print the slope 56.7 KiB:\n%s", b.String())
	}
	// 256 at 40 KiB and 1,024 at 63 KiB: each average within 64 KiB, but one more stream costs
	// 70.7 KiB.
	b.Reset()
	miss := report(&b, cfg, []row{lvl(256, 40), lvl(1024, 63)}, nil, time.Minute)
	if len(miss) != 1 || !strings.Contains(miss[0], "70.7 KiB") {
		t.Fatalf("misses %q, want the slope 70.7 KiB:\n%s", miss, b.String())
	}
	b.Reset()
	miss = report(&b, cfg, []row{lvl(1024, 66)}, nil, time.Minute)
	if len(miss) != 1 || !strings.Contains(miss[0], "1024 streams: 66.0 KiB/stream") {
		t.Fatalf("misses %q, want the 1,024-stream average:\n%s", miss, b.String())
	}
}

// TestReportGoals checks the goals of issue 17: the CPU ratio to the floor client at 1,024
// streams, the memory slope, the 1,024-stream verdict and errors, and the largest level refused
// by the client-effect estimates; they print PASS or FAIL and never count as misses.
func TestReportGoals(t *testing.T) {
	cfg := config{ttft: 500 * time.Millisecond, itl: 100 * time.Millisecond, outputTokens: 32}
	lvl := func(streams int, cpu time.Duration, kib float64, cs *record.ClientStats) row {
		return row{streams: streams, achieved: float64(streams), tokens: 1e6, cpu: cpu,
			rssPerStream: kib * 1024, ttft: 500.5, tpot: 100, client: cs}
	}
	ok := &record.ClientStats{Evidence: record.EvidenceEstimates, Effects: map[string]float64{"ttft_p50": 0.0005}}
	lagged := &record.ClientStats{Bound: true, Evidence: record.EvidenceEstimates, Effects: map[string]float64{"ttft_p50": 0.25, selfcheck.EffectLoad: 0.4}}
	// kneecap 1.10 × the floor at 1,024 streams, 30 KiB a stream more per stream, 4,096 refused
	// by the estimates: every goal met.
	rows := []row{lvl(1024, 1100*time.Millisecond, 30, ok), lvl(4096, 4400*time.Millisecond, 30, lagged)}
	floor := []row{lvl(1024, time.Second, 20, nil), lvl(4096, 4*time.Second, 20, nil)}
	var b strings.Builder
	report(&b, cfg, rows, floor, time.Minute)
	out := b.String()
	for _, want := range []string{"PASS  memory per stream (slope) 30.0 KiB ≤ 40 KiB", "PASS  1024 streams: client CPU 1.10× the floor client's ≤ 1.15×",
		"PASS  1024 streams: not client-bound", "PASS  4096 streams: client-bound by the estimates (client effect on TTFT p50 25.0%, on offered load 40.0%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// 1.30 × the floor, the 4,096 level not refused: FAIL, and still no miss.
	rows[0].cpu, rows[1].client = 1300*time.Millisecond, ok
	b.Reset()
	miss := report(&b, cfg, rows, floor, time.Minute)
	out = b.String()
	for _, want := range []string{"FAIL  1024 streams: client CPU 1.30×", "FAIL  4096 streams: client-bound by the estimates (client effect on TTFT p50 ≤ 0.1%)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, m := range miss {
		if strings.Contains(m, "×") || strings.Contains(m, "estimates") {
			t.Errorf("a goal counted as a miss: %q", m)
		}
	}
}
