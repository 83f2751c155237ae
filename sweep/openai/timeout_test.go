package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// The stream timeouts of the fault suite: well under faultTimeout (request_timeout), so the
// message says which one ended the request.
const (
	suiteTTFT  = 300 * time.Millisecond
	suiteStall = 300 * time.Millisecond
)

// TestFaultStreamTimeouts plays the silent faults against a client with ttft_timeout and
// stall_timeout: each is class timeout, ends no earlier than the timeout that applies and
// within it + slack, and its message names the silence.
func TestFaultStreamTimeouts(t *testing.T) {
	hostileURL := func(f fault) func(testing.TB) string {
		return func(t testing.TB) string {
			_, srv := startHostile(t, func(int64) fault { return f })
			return srv.URL
		}
	}
	for _, c := range []struct {
		name  string
		url   func(testing.TB) string
		after time.Duration // the timeout that ends it
		msg   string
	}{
		{"accepts the connection and never answers", silentListener, suiteTTFT,
			"openai: request: no answer within ttft_timeout 300ms: the server accepted the connection and sent nothing"},
		{"silent", hostileURL(faultSilent), suiteTTFT, "no answer within ttft_timeout 300ms"},
		{"no-token", hostileURL(faultNoToken), suiteTTFT,
			"openai: stream: no token within ttft_timeout 300ms: the response began and streamed no content"},
		{"trickle", hostileURL(faultTrickle), suiteTTFT, "no token within ttft_timeout 300ms"},
		{"stall", hostileURL(faultStall), suiteStall,
			"openai: stream: stalled: no content chunk for stall_timeout 300ms after 1 content chunks (parts of a tool call count, other events do not)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := newClient(t, c.url(t), func(o *Options) {
				o.RequestTimeout, o.TTFTTimeout, o.StallTimeout, o.Model = faultTimeout, suiteTTFT, suiteStall, sim.DefaultModel
			})
			start := time.Now()
			rec := do(t, cl, record.Request{Prompt: "x y", PromptTokens: 2, MaxTokens: 8, IgnoreEOS: true})
			el := time.Since(start)
			checkFailure(t, &rec, record.ErrTimeout)
			if el < c.after || el > c.after+timeoutSlack {
				t.Errorf("Do returned after %v, want [%v, %v]", el, c.after, c.after+timeoutSlack)
			}
			if !strings.Contains(rec.Error, c.msg) {
				t.Errorf("message %q, want it to contain %q", rec.Error, c.msg)
			}
		})
	}
}

// TestTimeoutsDoNotCutAHealthyStream streams for 1.5 s, three times ttft_timeout and six
// times stall_timeout, with a first token after 100 ms and a chunk every 100 ms: the stream
// timeouts bound the silence, not the request, so it succeeds.
func TestTimeoutsDoNotCutAHealthyStream(t *testing.T) {
	const gap = 100 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(roleChunk())
		tk := time.NewTicker(gap)
		defer tk.Stop()
		for range 15 {
			<-tk.C
			s.data(contentChunk("a"))
		}
		s.data("[DONE]")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(o *Options) { o.TTFTTimeout, o.StallTimeout = 500*time.Millisecond, 250*time.Millisecond })
	rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 15})
	if rec.Status != record.StatusOK || len(rec.Chunks) != 15 {
		t.Fatalf("%s %s (%s), %d chunks: want the whole stream", rec.Status, rec.ErrorClass, rec.Error, len(rec.Chunks))
	}
	if rec.E2E < 14*gap {
		t.Errorf("E2E %v, want ≥ %v", rec.E2E, 14*gap)
	}
}

// TestFaultDoneWithoutClose sends [DONE] and never ends the chunked body. Every request is
// ok and ends at [DONE]; the first waits drainTimeout for the body's end, and once the server
// has shown that it leaves bodies open the later ones do not wait at all (the drain runs in
// the background): ten requests take far less than the 2.5 s ten drains in line would.
func TestFaultDoneWithoutClose(t *testing.T) {
	_, srv := startHostile(t, func(int64) fault { return faultDoneOpen })
	c := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 2})
	if rec.Status != record.StatusOK || rec.OutputTokens != 2 {
		t.Fatalf("first request: %s %s (%s)", rec.Status, rec.ErrorClass, rec.Error)
	}
	if !c.openBodies.Load() {
		t.Fatal("the client did not notice the body left open")
	}
	const n = 10
	start := time.Now()
	for i := range n {
		rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 2})
		if rec.Status != record.StatusOK || rec.OutputTokens != 2 || rec.E2E > drainTimeout {
			t.Fatalf("request %d: %s %s (%s), E2E %v", i, rec.Status, rec.ErrorClass, rec.Error, rec.E2E)
		}
	}
	if el := time.Since(start); el > n*drainTimeout/3 {
		t.Errorf("%d requests took %v: the workers waited for the drains (in line: %v)", n, el, n*drainTimeout)
	}
}

// TestStallCountsAsError runs a sweep against a server whose every third request stalls after
// its first token: the stalled requests are class timeout, and the error-rate stop rule
// counts them (the sweep stops after the first level).
func TestStallCountsAsError(t *testing.T) {
	h, srv := startHostile(t, func(n int64) fault {
		if n%3 == 2 {
			return faultStall
		}
		return faultNone
	})
	cl := newClient(t, srv.URL, func(o *Options) {
		o.RequestTimeout, o.StallTimeout, o.Model = 10*time.Second, 200*time.Millisecond, sim.DefaultModel
	})
	plan := shortPlan(t, []int{2, 4})
	plan.Judge = analysis.StopRules{Rules: record.StopRules{MaxErrorRate: 0.05}}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), nil, plan, cl, sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Levels) != 1 || !strings.Contains(out.StopReason, "error rate") {
		t.Fatalf("%d levels, stop reason %q: want the error-rate rule after the first", len(out.Levels), out.StopReason)
	}
	stalled := 0
	for i := range sink.recs {
		if r := &sink.recs[i]; !r.OK() {
			checkFailure(t, r, record.ErrTimeout)
			if !strings.Contains(r.Error, "stall_timeout") {
				t.Errorf("record %q does not name the stall", r.Error)
			}
			stalled++
		}
	}
	if played := h.counts()[faultStall]; stalled != played || played == 0 {
		t.Errorf("%d timeout records, server stalled %d streams", stalled, played)
	}
}

// shortPlan is a plan of short levels of 8-token requests at levels.
func shortPlan(t *testing.T, levels []int) sweep.Plan {
	t.Helper()
	wl, err := workload.NewWorkload(workload.WorkloadConfig{
		InputTokens:  workload.Dist{Dist: workload.DistFixed, Mean: 8},
		OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 8},
		FixedOutput:  true,
		Seed:         1,
	}, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	return sweep.Plan{
		Levels: levels,
		Protocol: sweep.Protocol{
			Warmup:       50 * time.Millisecond,
			WarmupMax:    5 * time.Second,
			Duration:     500 * time.Millisecond,
			MaxDuration:  500 * time.Millisecond,
			CITarget:     0.5,
			DrainTimeout: 5 * time.Second,
		},
		Workload: wl,
	}
}
