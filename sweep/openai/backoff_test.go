package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// failureBackoffBase is sweep's: the least pause after a failed request (sweep/dead.go).
const failureBackoffBase = 100 * time.Millisecond

// backoffSweep runs one closed-loop level of c workers for d against the simulator in fixed
// mode changed by mod, counting the generation requests it receives; it returns the records
// and that count.
func backoffSweep(t *testing.T, c int, d time.Duration, mod func(*sim.Config)) ([]record.Record, int64) {
	t.Helper()
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT, cfg.ITL, cfg.TokensPerChunk = 20*time.Millisecond, 2*time.Millisecond, 1
	mod(&cfg)
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
			got.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); s.Close() })
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	plan := shortPlan(t, []int{c})
	plan.Protocol.Duration, plan.Protocol.MaxDuration = d, d
	sink := &memSink{}
	if _, err := sweep.Run(context.Background(), nil, plan, cl, sink); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	return sink.recs, got.Load()
}

// byWorker returns each worker's records in the order it sent them.
func byWorker(recs []record.Record) map[int][]record.Record {
	out := map[int][]record.Record{}
	for _, r := range recs {
		out[r.Worker] = append(out[r.Worker], r)
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b record.Record) int { return a.Seq - b.Seq })
	}
	return out
}

// TestFailingServerNotHammered: against a server that answers every request with an instant
// 500 (faults.error_rate 1), each closed-loop worker pauses at least failureBackoffBase after
// each failure, so none sends more than 10 requests/s, and every request the server received is
// recorded, each pause in its Pause (issue 26; before, one worker sent 2,000–2,900 requests/s).
func TestFailingServerNotHammered(t *testing.T) {
	t.Parallel()
	recs, got := backoffSweep(t, 2, time.Second, func(c *sim.Config) { c.Faults.ErrorRate = 1 })
	if int64(len(recs)) != got || got == 0 {
		t.Errorf("%d records of the %d requests the server received, want every one", len(recs), got)
	}
	for w, rs := range byWorker(recs) {
		for i := 1; i < len(rs); i++ {
			prev, r := rs[i-1], rs[i]
			if prev.ErrorClass != record.ErrHTTP5xx {
				t.Fatalf("worker %d request %d: %s %s, want an http_5xx failure", w, prev.Seq, prev.Status, prev.ErrorClass)
			}
			if gap := time.Duration(r.Sent - prev.Sent); gap < failureBackoffBase || r.Pause < failureBackoffBase {
				t.Errorf("worker %d: request %d sent %v after the failed one before it (pause %v), want ≥ %v",
					w, r.Seq, gap, r.Pause, failureBackoffBase)
			}
		}
	}
}

// TestRetryAfterHonoured: a 429 whose Retry-After asks for 1 s (the simulator's
// faults.retry_after, sent by its queue limit) is recorded in retry_after_ns, and its worker's
// next request waits at least that long.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	recs, _ := backoffSweep(t, 4, 1500*time.Millisecond, func(c *sim.Config) {
		c.FixedSlots, c.Faults.QueueLimit429, c.Faults.RetryAfter = 1, 1, time.Second
	})
	limited := 0
	for w, rs := range byWorker(recs) {
		for i, r := range rs {
			if r.ErrorClass != record.ErrHTTP429 {
				continue
			}
			limited++
			if r.RetryAfter != time.Second {
				t.Errorf("worker %d request %d: a 429 with retry_after %v, want 1s", w, r.Seq, r.RetryAfter)
			}
			if i+1 < len(rs) && rs[i+1].Pause < time.Second {
				t.Errorf("worker %d: the request after a 429 with Retry-After 1 s paused %v", w, rs[i+1].Pause)
			}
		}
	}
	if limited == 0 {
		t.Skip("no request was refused with 429 (the queue never passed 1): nothing to check")
	}
}
