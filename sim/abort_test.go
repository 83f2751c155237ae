package sim

import (
	"context"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestAbortFreesRunningSlot: a client that closes its stream mid-answer leaves the running
// batch (the engine reaps it at its next step): over real HTTP, with max_num_seqs 3 busy
// for 10 s more and a fourth request waiting, /metrics shows the waiting one admitted in
// the leaver's place (3 running, 0 waiting) and never more than 3 running.
func TestAbortFreesRunningSlot(t *testing.T) {
	_, url := newTestServer(t, Config{MaxNumSeqs: 3, StepBase: 2 * time.Millisecond, OutputDist: outputFixed,
		OutputTokens: 5000}) // 5000 steps of ≥ 2 ms: 10 s a stream would hold its slot
	c := newClient(url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaver, err := c.CreateChatCompletionStream(ctx, chatReq(5000, true))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		st, err := c.CreateChatCompletionStream(context.Background(), chatReq(5000, true))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
	}
	waitRunning(t, url, 3)
	recvContent(t, leaver, 3)
	waiter, err := c.CreateChatCompletionStream(context.Background(), chatReq(5000, true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waiter.Close() })
	if sc := scrapeGPUs(t, url); sc.fams["vllm:num_requests_waiting"].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("the fourth request is not waiting for a slot")
	}
	cancel()
	leaver.Close()
	// The waiting request takes the freed slot: 3 running again, none waiting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		sc := scrapeGPUs(t, url)
		w := sc.fams["vllm:num_requests_waiting"].GetMetric()[0].GetGauge().GetValue()
		if w == 0 && sc.running() == 3 {
			break
		}
		if sc.running() > 3 || time.Now().After(deadline) {
			t.Fatalf("running %g waiting %g: the leaver's slot was not freed for the waiting request", sc.running(), w)
		}
		time.Sleep(2 * time.Millisecond) // polling the server's state: no order to wait for
	}
	if _, err := waiter.Recv(); err != nil {
		t.Errorf("the admitted request: %v", err)
	}
}

// recvContent reads st until n chunks with content have come.
func recvContent(t *testing.T, st *openai.ChatCompletionStream, n int) {
	t.Helper()
	for got := 0; got < n; {
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Choices) > 0 && resp.Choices[0].Delta.Content != "" {
			got++
		}
	}
}
