package openai

// Sweeps against servers that stop answering (DESIGN §3.2): a dead server, a silent one, and
// one that never ends its bodies after [DONE], through the real level runner and client.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// liveHook is a sweep.Observer that calls onLive with every live report.
type liveHook struct{ onLive func(sweep.LiveStats) }

func (liveHook) LevelStarted(int, int)        {}
func (h liveHook) Live(s sweep.LiveStats)     { h.onLive(s) }
func (liveHook) LevelFinished(l record.Level) {}

// TestFaultDeadServer kills the server (every connection cut, the port closed: a kill -9)
// during the first level's window. The workers' connect errors back off, the level ends
// UnreachableAfter after the last worker started failing, the sweep stops there as
// unreachable naming the cause, and the records stay few: without backoff the four workers
// wrote tens of thousands of connect records in seconds.
func TestFaultDeadServer(t *testing.T) {
	t.Parallel()
	const unreachable = 500 * time.Millisecond
	_, srv := startHostile(t, func(int64) fault { return faultNone })
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	plan := shortPlan(t, []int{4, 8})
	plan.Protocol.Duration, plan.Protocol.MaxDuration = 3*time.Second, 3*time.Second
	plan.UnreachableAfter = unreachable
	var (
		once   sync.Once
		killed time.Time
		wg     sync.WaitGroup
	)
	plan.Observer = liveHook{func(s sweep.LiveStats) {
		if s.Phase == record.PhaseMeasure {
			once.Do(func() {
				killed = time.Now()
				srv.CloseClientConnections()
				wg.Go(srv.Close)
			})
		}
	}}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), nil, plan, cl, sink)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if killed.IsZero() {
		t.Fatal("the server was never killed")
	}
	if el := time.Since(killed); el > unreachable+3*time.Second {
		t.Errorf("the sweep ended %v after the kill, want ≤ UnreachableAfter %v + 3 s", el, unreachable)
	}
	want := "server unreachable: at concurrency 4 no request reached the server for 500ms: every worker's requests failed to connect (openai: request: "
	if !out.Unreachable || out.Silent || !strings.HasPrefix(out.StopReason, want) || !strings.Contains(out.StopReason, "connection refused") {
		t.Fatalf("outcome unreachable %v silent %v, stop %q: want it to start %q", out.Unreachable, out.Silent, out.StopReason, want)
	}
	if len(sink.runs) != 1 || !slices.ContainsFunc(sink.runs[0].Notes, func(n string) bool { return strings.Contains(n, "no request reached the server") }) {
		t.Fatalf("%d levels, notes %q: want the first level only, noting the unreachable server", len(sink.runs), sink.runs[0].Notes)
	}
	connect := 0
	for i := range sink.recs {
		if sink.recs[i].ErrorClass == record.ErrConnect {
			connect++
		}
	}
	// Backoff from 100 ms doubling (jittered up to 1.5×): about 3 attempts a worker in
	// UnreachableAfter, a few more with the controller's tick and a slow machine.
	if connect == 0 || connect > 4*15 {
		t.Errorf("%d connect records from 4 workers, want 1 … 60 (backoff)", connect)
	}
}

// TestFaultSilentSweep runs levels 1 and 4 against a server that reads every request and
// never answers, with ttft_timeout 300 ms: the first level ends as soon as its worker's first
// request timed out, and the sweep stops there with a reason naming the silence.
func TestFaultSilentSweep(t *testing.T) {
	t.Parallel()
	_, srv := startHostile(t, func(int64) fault { return faultSilent })
	cl := newClient(t, srv.URL, func(o *Options) { o.TTFTTimeout, o.Model = suiteTTFT, sim.DefaultModel })
	plan := shortPlan(t, []int{1, 4})
	plan.Protocol.WarmupMax, plan.Protocol.DrainTimeout = time.Minute, time.Minute
	sink := &memSink{}
	start := time.Now()
	out, err := sweep.Run(context.Background(), nil, plan, cl, sink)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > suiteTTFT+2*time.Second {
		t.Errorf("the sweep took %v, want ≤ ttft_timeout %v + 2 s", el, suiteTTFT)
	}
	want := "no answer: at concurrency 1 every worker's first request timed out and none was answered " +
		"(openai: request: no answer within ttft_timeout 300ms: the server accepted the connection and sent nothing)"
	if !out.Silent || out.Unreachable || out.StopReason != want {
		t.Fatalf("outcome silent %v unreachable %v, stop %q: want %q", out.Silent, out.Unreachable, out.StopReason, want)
	}
	if len(sink.runs) != 1 || sink.runs[0].Steady || sink.runs[0].W1 != sink.runs[0].W0 {
		t.Fatalf("levels %+v: want one level, without a window", sink.runs)
	}
	for i := range sink.recs {
		r := &sink.recs[i]
		if r.Seq == 0 {
			checkFailure(t, r, record.ErrTimeout)
		} else if r.Status != record.StatusCancelled {
			t.Errorf("request %d of worker %d: %s %s, want cancelled when the level ended", r.Seq, r.Worker, r.Status, r.ErrorClass)
		}
	}
}

// TestFaultDoneOpenSweep sweeps a server that sends [DONE] and never ends the chunked body:
// every request is ok, and no worker waits for the bodies to end, so the gap between one of a
// worker's requests ending and its next being sent stays far below the 250 ms drain bound
// (after the first request, which learns that the server leaves bodies open).
func TestFaultDoneOpenSweep(t *testing.T) {
	t.Parallel()
	_, srv := startHostile(t, func(int64) fault { return faultDoneOpen })
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	sink := &memSink{}
	s0 := selfcheck.SampleClient()
	out, err := sweep.Run(context.Background(), nil, shortPlan(t, []int{2, 4}), cl, sink)
	busy := selfcheck.MachineBusy(selfcheck.SampleClient().Since(s0))
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != sweep.StopDone || len(sink.runs) != 2 {
		t.Fatalf("%d levels, stop %q", len(sink.runs), out.StopReason)
	}
	last := map[[2]int]*record.Record{}
	idle := 0
	for i := range sink.recs {
		r := &sink.recs[i]
		if !r.OK() || r.OutputTokens != 2 {
			t.Fatalf("record %+v: want ok with 2 tokens", r)
		}
		k := [2]int{r.Level, r.Worker}
		if p := last[k]; p != nil && r.Sent-p.Done() > int64(drainTimeout/2) && !(r.Level == 0 && p.Seq == 0) {
			idle++
		}
		last[k] = r
	}
	if idle > 0 && len(busy) > 0 {
		// A worker the machine's other work held back is late without waiting for a drain.
		t.Skipf("%d of %d requests were sent more than %v after the worker's previous one ended: inconclusive, the machine was busy (%s)",
			idle, len(sink.recs), drainTimeout/2, strings.Join(busy, ", "))
	}
	if idle > 0 {
		t.Errorf("%d of %d requests were sent more than %v after the worker's previous one ended", idle, len(sink.recs), drainTimeout/2)
	}
}
