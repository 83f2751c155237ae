package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestFixedSlots: with fixed_slots 2, two requests run while two more wait first come first
// served (vllm:num_requests_waiting counts them), and each waiting request's first token comes
// one service time, TTFT + (n − 1) × ITL, after the first token of the request whose slot it
// takes, TTFT after that request's arrival (DESIGN §6).
func TestFixedSlots(t *testing.T) {
	const slots, n = 2, 40
	srv, url := newTestServer(t, Config{Profile: ProfileFixed, FixedSlots: slots, TTFT: 50 * time.Millisecond, ITL: 5 * time.Millisecond})
	service := srv.Config().FixedService(n) // 50 ms + 39 × 5 ms = 245 ms
	c := newClient(url)
	type trace struct {
		sent        time.Time // before the request was sent
		first, last time.Time // arrival of the first and the last content chunk
		tokens      int
		err         error
	}
	traces := make([]trace, 2*slots)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range traces {
		traces[i].sent = time.Now()
		// Returns after the role chunk, which the server sends once the request holds or
		// waits for a slot: the four queue in this order.
		st, err := c.CreateChatCompletionStream(context.Background(), chatReq(n, true))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer st.Close()
			tr := &traces[i]
			for {
				resp, err := st.Recv()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						tr.err = err
					}
					return
				}
				if len(resp.Choices) > 0 && resp.Choices[0].Delta.Content != "" {
					now := time.Now()
					if tr.first.IsZero() {
						tr.first = now
					}
					tr.last = now
					tr.tokens += countTokens(resp.Choices[0].Delta.Content)
				}
			}
		})
	}
	st := srv.Stats()
	running, waiting := metricValue(t, url, "vllm:num_requests_running"), metricValue(t, url, "vllm:num_requests_waiting")
	// Before the first slot frees (one service time after the first request arrived) the
	// counts are exact; a machine too slow to get here by then leaves them unchecked.
	checked := time.Since(start) < service
	wg.Wait()
	if checked && (st.Running != slots || st.Waiting != slots || running != slots || waiting != slots) {
		t.Errorf("while queued: stats %d running %d waiting, metrics %g and %g; want %d and %d", st.Running, st.Waiting, running, waiting, slots, slots)
	}
	for i, tr := range traces {
		if tr.err != nil || tr.tokens != n {
			t.Fatalf("request %d: %d tokens, err %v; want %d", i, tr.tokens, tr.err, n)
		}
	}
	ttft := srv.Config().TTFT
	for i := range slots {
		a, b := traces[i], traces[slots+i]
		// Never early, by causality: a's slot frees when its last token is due, service after
		// its arrival (after a.sent), and b's first token is due TTFT later (a TTFT counted
		// from b's arrival would come up to TTFT early). Late by the timers' and the client's
		// wake-ups on a loaded machine.
		want := service + ttft
		d := b.first.Sub(a.sent)
		t.Logf("request %d: first token %v after request %d was sent (service + TTFT %v)", slots+i, d, i, want)
		if d < want || d > want*13/10 {
			t.Errorf("request %d's first token %v after request %d was sent, want service + TTFT = %v (1–1.3×)", slots+i, d, i, want)
		}
		if !b.first.After(a.last) {
			t.Errorf("request %d began before request %d, whose slot it takes, ended", slots+i, i)
		}
	}
	if st := srv.Stats(); st.Running != 0 || st.Waiting != 0 {
		t.Errorf("after: %d running, %d waiting; want 0 and 0", st.Running, st.Waiting)
	}
	resp, err := http.Get(url + "/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v["max_num_seqs"] != float64(slots) || v["fixed_slots"] != float64(slots) {
		t.Errorf("/version %v (%v): want max_num_seqs and fixed_slots %d", v, err, slots)
	}
}

// TestFixedSlotsClientLeaves: a waiting request whose client leaves gives up its place, and
// one that leaves holding a slot frees it, so the next request runs at once.
func TestFixedSlotsClientLeaves(t *testing.T) {
	srv, url := newTestServer(t, Config{Profile: ProfileFixed, FixedSlots: 1, TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
	c := newClient(url)
	ctx, cancel := context.WithCancel(context.Background())
	holder, err := c.CreateChatCompletionStream(ctx, chatReq(1000, true)) // 5 s: holds the slot
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := c.CreateChatCompletionStream(ctx, chatReq(1000, true))
	if err != nil {
		t.Fatal(err)
	}
	if st := srv.Stats(); st.Running != 1 || st.Waiting != 1 {
		t.Errorf("stats %d running %d waiting, want 1 and 1", st.Running, st.Waiting)
	}
	cancel()
	holder.Close()
	waiter.Close()
	// The next request gets the slot once the server has seen both clients leave: its TTFT
	// is the configured one, far below the holder's 5 s.
	nctx, ncancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ncancel()
	tr, err := chatStream(nctx, c, chatReq(3, true))
	if err != nil {
		t.Fatalf("the next request: %v (the slot was not freed)", err)
	}
	if d := tr.ttft(); d > time.Second {
		t.Errorf("TTFT %v after both clients left, want about %v", d, srv.Config().TTFT)
	}
	if st := srv.Stats(); st.Running != 0 || st.Waiting != 0 {
		t.Errorf("after: %d running, %d waiting; want 0 and 0", st.Running, st.Waiting)
	}
}
