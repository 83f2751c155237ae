package sim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// countStatuses posts n requests in sequence and counts status codes.
func countStatuses(t *testing.T, url, body string, n int) map[int]int {
	t.Helper()
	got := map[int]int{}
	for range n {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _, _ = sseTrace(resp)
		resp.Body.Close()
		got[resp.StatusCode]++
	}
	return got
}

// TestErrorRate: error_rate answers 500 for about that share of requests. Draws come from the
// seed and the request number, so the count is reproducible; the window is ±4 binomial
// standard deviations (√(n p (1−p)) = √(200 × 0.3 × 0.7) ≈ 6.5).
func TestErrorRate(t *testing.T) {
	_, url := newTestServer(t, Config{Profile: "fixed", TTFT: time.Microsecond, ITL: time.Microsecond, Faults: Faults{ErrorRate: 0.3}})
	got := countStatuses(t, url, `{"prompt":"a","max_tokens":1}`, 200)
	if got[500] < 34 || got[500] > 86 || got[500]+got[200] != 200 {
		t.Errorf("statuses %v, want about 60 of 200 as 500 (34–86)", got)
	}
}

// TestDisconnectRate: disconnect_rate cuts about that share of streams before [DONE].
func TestDisconnectRate(t *testing.T) {
	_, url := newTestServer(t, Config{Profile: "fixed", TTFT: time.Microsecond, ITL: 100 * time.Microsecond, Faults: Faults{DisconnectRate: 0.5}})
	cut, whole := 0, 0
	for range 100 {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a","max_tokens":10,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		ev, done, rerr := sseTrace(resp)
		resp.Body.Close()
		switch {
		case done && rerr == nil && len(ev) == 10:
			whole++
		case !done && rerr != nil && len(ev) < 10:
			cut++
		default:
			t.Fatalf("stream neither whole nor cut: %d events, done %t, err %v", len(ev), done, rerr)
		}
	}
	// Binomial(100, 0.5): sd 5; ±4 sd.
	if cut < 30 || cut > 70 {
		t.Errorf("%d of 100 streams cut, want about 50 (30–70)", cut)
	}
}

// TestStallRate: stall_rate pauses about that share of streams once for stall_duration.
func TestStallRate(t *testing.T) {
	const stall = 60 * time.Millisecond
	_, url := newTestServer(t, Config{Profile: "fixed", TTFT: time.Millisecond, ITL: time.Millisecond,
		Faults: Faults{StallRate: 0.5, StallDuration: stall}})
	const n = 40
	stalled := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a","max_tokens":8,"stream":true}`))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			ev, done, err := sseTrace(resp)
			if err != nil || !done || len(ev) != 8 {
				errs <- fmt.Errorf("stream: %d events, done %t, err %v", len(ev), done, err)
				return
			}
			var maxGap time.Duration
			for i := 1; i < len(ev); i++ {
				maxGap = max(maxGap, ev[i].Sub(ev[i-1]))
			}
			if maxGap >= stall*3/4 {
				mu.Lock()
				stalled++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Binomial(40, 0.5): sd ≈ 3.2; ±4 sd ≈ 7–33.
	if stalled < 7 || stalled > 33 {
		t.Errorf("%d of %d streams stalled ≥ %v, want about 20 (7–33)", stalled, n, stall*3/4)
	}
}

// TestQueueLimit429: with one slot and queue_limit_429 = 1, the request that would make the
// waiting queue longer than 2 is refused with 429.
func TestQueueLimit429(t *testing.T) {
	srv, url := newTestServer(t, Config{MaxNumSeqs: 1, StepBase: time.Millisecond, OutputDist: outputFixed, OutputTokens: 5000,
		Faults: Faults{QueueLimit429: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions",
			strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"stream":true}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	// Headers arrive after the role chunk, which is written once the request is queued.
	for i := range 3 {
		if resp := open(); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	if st := srv.Stats(); st.Running+st.Waiting != 3 || st.Waiting < 2 {
		t.Fatalf("stats %+v, want 3 requests with ≥ 2 waiting", st)
	}
	if resp := open(); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("4th request: status %d, want 429", resp.StatusCode)
	}
}

// TestDisconnectFreesSlot: a client that leaves mid-stream frees its slot; the next request
// gets it long before the abandoned one would have finished (5,000 steps).
func TestDisconnectFreesSlot(t *testing.T) {
	srv, url := newTestServer(t, Config{MaxNumSeqs: 1, StepBase: time.Millisecond, OutputDist: outputFixed, OutputTokens: 5000})
	c := newClient(url)
	ctx, cancel := context.WithCancel(context.Background())
	req := chatReq(5000, true)
	st, err := c.CreateChatCompletionStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	recvContent(t, st, 3)
	cancel()
	st.Close()
	start := time.Now()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	tr, err := chatStream(ctx2, c, chatReq(5, true))
	if err != nil {
		t.Fatal(err)
	}
	// The abandoned request had ~5,000 steps (≥ 5 s) left; its slot must come free within
	// a few steps. 1 s leaves room for a loaded machine.
	if d := time.Since(start); d > time.Second || tr.tokens != 5 {
		t.Errorf("next request took %v for %d tokens; the slot was not freed", d, tr.tokens)
	}
	if s := srv.Stats(); s.Running > 1 || s.Waiting != 0 {
		t.Errorf("stats %+v after both requests", s)
	}
}
