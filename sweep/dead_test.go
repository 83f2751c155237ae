package sweep_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
)

// TestInterruptBoundsTheDrain interrupts a sweep whose requests take 20 s and whose
// drain_timeout is a minute, once during the load and once during the drain of a level that
// ended at max_duration: either way the drain ends InterruptDrainTimeout after the interrupt,
// cancelling what is in flight, and the sweep stops as interrupted.
func TestInterruptBoundsTheDrain(t *testing.T) {
	t.Parallel() // 5 s of waiting in each subtest
	for _, phase := range []record.Phase{record.PhaseMeasure, record.PhaseDrain} {
		t.Run(string(phase), func(t *testing.T) {
			t.Parallel()
			// 200 tokens at 100 ms: 20 s a request.
			url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 50 * time.Millisecond, ITL: 100 * time.Millisecond})
			interrupt, stop := context.WithCancel(context.Background())
			defer stop()
			var (
				once sync.Once
				at   time.Time
			)
			obs := &observer{onLive: func(s sweep.LiveStats) {
				if s.Phase == phase {
					once.Do(func() { at = time.Now(); stop() })
				}
			}}
			proto := sweep.Protocol{
				Warmup: 0, WarmupMax: 200 * time.Millisecond,
				Duration: 500 * time.Millisecond, MaxDuration: 2 * time.Second,
				CITarget: 0.05, DrainTimeout: time.Minute,
			}
			plan := sweep.Plan{Levels: []int{4, 8}, Protocol: proto, Workload: fixedWorkload{out: 200}, Observer: obs}
			sink := &memSink{}
			out, err := sweep.Run(context.Background(), interrupt, plan, newClient(t, url, 8), sink)
			if err != nil {
				t.Fatal(err)
			}
			if at.IsZero() {
				t.Fatalf("no live report in phase %s", phase)
			}
			if el := time.Since(at); el < sweep.InterruptDrainTimeout-100*time.Millisecond || el > sweep.InterruptDrainTimeout+2*time.Second {
				t.Errorf("the sweep ended %v after the interrupt, want about InterruptDrainTimeout (%v)", el, sweep.InterruptDrainTimeout)
			}
			if out.StopReason != sweep.StopInterrupted || len(sink.runs) != 1 {
				t.Fatalf("stop %q after %d levels, want interrupted after the first", out.StopReason, len(sink.runs))
			}
			if run := sink.runs[0]; run.Cancelled != 4 || !hasNote(run, "5s after the interrupt") {
				t.Errorf("cancelled %d, notes %q: want the 4 requests cancelled 5 s after the interrupt", run.Cancelled, run.Notes)
			}
		})
	}
}

// Rate levels against servers that stop answering (DESIGN §3.2, §3.9): one killed during the
// window and one that accepts every request and never answers, through the real level runner
// and client over loopback.

// rateFaultTTFT is the ttft_timeout of the rate fault tests' client.
const rateFaultTTFT = 300 * time.Millisecond

// faultClient is a client of url with ttft_timeout rateFaultTTFT and room for conns streams.
func faultClient(t *testing.T, url string, conns int) *openai.Client {
	t.Helper()
	o := openai.DefaultOptions()
	o.BaseURL, o.Model, o.API = url, sim.DefaultModel, record.APIChat
	o.RequestTimeout, o.TTFTTimeout, o.MaxConns = 30*time.Second, rateFaultTTFT, conns
	c, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// killableSim serves the fixed engine (5 ms TTFT, 1 ms ITL) on an httptest server the test can
// kill.
func killableSim(t *testing.T) *httptest.Server {
	t.Helper()
	s, err := sim.NewServer(sim.Config{Profile: sim.ProfileFixed, TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); _ = s.Close() })
	return srv
}

// TestRateDeadServer kills the server (every connection cut, the port closed) during the
// window of the first of two rate levels, at 20 and 40 requests/s with the default cap of
// 4096 slots and UnreachableAfter 500 ms: the level ends UnreachableAfter after the first
// connect error (within 3 s of the kill), the sweep stops as unreachable, and the connect
// records stay about rate × UnreachableAfter (bound: rate × (UnreachableAfter + 1 s)).
// Before the level kept one run of connect errors for the whole level, each never-used slot's
// first error restarted the clock, and the sweep ran on.
func TestRateDeadServer(t *testing.T) {
	for _, rps := range []float64{20, 40} {
		t.Run(fmt.Sprint(rps), func(t *testing.T) {
			t.Parallel()
			const unreachable = 500 * time.Millisecond
			srv := killableSim(t)
			var (
				once   sync.Once
				killed time.Time
				wg     sync.WaitGroup
			)
			obs := &observer{onLive: func(s sweep.LiveStats) {
				if s.Phase == record.PhaseMeasure {
					once.Do(func() {
						killed = time.Now()
						srv.CloseClientConnections()
						wg.Go(srv.Close)
					})
				}
			}}
			proto := shortProtocol()
			proto.Duration, proto.MaxDuration = 3*time.Second, 3*time.Second
			plan := sweep.Plan{Rates: []float64{rps, 2 * rps}, Protocol: proto, Workload: fixedWorkload{out: 4},
				Observer: obs, UnreachableAfter: unreachable}
			// A bound on the sweep, should it not see the server die: it then ends cancelled.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			sink := &memSink{}
			out, err := sweep.Run(ctx, context.Background(), plan, faultClient(t, srv.URL, 64), sink)
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
			want := fmt.Sprintf("server unreachable: at %v requests/s no request reached the server for 500ms: every request failed to connect (openai: request: ", rps)
			if !out.Unreachable || out.Silent || !strings.HasPrefix(out.StopReason, want) {
				t.Fatalf("outcome unreachable %v silent %v, stop %q: want it to start %q", out.Unreachable, out.Silent, out.StopReason, want)
			}
			if len(sink.runs) != 1 || !hasNote(sink.runs[0], "no request reached the server") {
				t.Fatalf("%d levels: want the first only, noting the unreachable server", len(sink.runs))
			}
			connect := 0
			for _, r := range sink.records[0] {
				if r.ErrorClass == record.ErrConnect {
					connect++
				}
			}
			if most := int(rps * (unreachable + time.Second).Seconds()); connect == 0 || connect > most {
				t.Errorf("%d connect records at %v requests/s, want 1 … %d", connect, rps, most)
			}
		})
	}
}

// TestRateSilentServer offers 20 requests/s to a server that reads every request and never
// answers, with ttft_timeout 300 ms and a warmup of 240 ms: the level ends once its first 4
// arrivals have timed out unanswered (about 300 ms + 3 gaps of 50 ms), within ttft_timeout +
// 2 s, and the sweep stops as silent. Before silence was also checked in the window, the
// warmup ended at the first timeout and the sweep ran every level.
func TestRateSilentServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // read the request: the server sees the client leave
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.CloseClientConnections(); srv.Close() })
	proto := shortProtocol()
	proto.WarmupMax, proto.DrainTimeout = time.Minute, time.Minute
	plan := sweep.Plan{Rates: []float64{20, 40}, Protocol: proto, Workload: fixedWorkload{out: 4}}
	sink := &memSink{}
	start := time.Now()
	out, err := sweep.Run(context.Background(), context.Background(), plan, faultClient(t, srv.URL, 64), sink)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > rateFaultTTFT+2*time.Second {
		t.Errorf("the sweep took %v, want ≤ ttft_timeout %v + 2 s", el, rateFaultTTFT)
	}
	want := "no answer: at 20 requests/s the level's first 4 arrivals timed out and none was answered (openai: request: no answer within ttft_timeout 300ms"
	if !out.Silent || out.Unreachable || !strings.HasPrefix(out.StopReason, want) {
		t.Fatalf("outcome silent %v unreachable %v, stop %q: want it to start %q", out.Silent, out.Unreachable, out.StopReason, want)
	}
	if len(sink.runs) != 1 || sink.runs[0].Steady {
		t.Fatalf("%d levels: want one, not steady", len(sink.runs))
	}
	for _, r := range sink.records[0] {
		if r.OK() {
			t.Fatalf("arrival %d answered by a silent server", r.Seq)
		}
	}
}

// TestShardedSilentServer: shard 0 of 2 on a Schedule offers its part of 20 requests/s to a
// server that never answers (ttft_timeout 300 ms): the level ends silent, and its part keeps
// the reason, "the server did not answer", for the merge to tell that the shard ended the
// level early (sweep.ErrEndedApart), not "one shard's part of the level" as a part the merge
// judges whole. Before, the reason was overwritten and such a level refused the whole merge.
func TestShardedSilentServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.CloseClientConnections(); srv.Close() })
	sched := sweep.Schedule{Start: time.Now().Add(600 * time.Millisecond), Shards: 2}
	plan := sweep.Plan{Rates: []float64{20, 40}, MaxConcurrency: 8, Protocol: shortProtocol(), Workload: fixedWorkload{out: 4}, Schedule: &sched}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), context.Background(), plan, faultClient(t, srv.URL, 64), sink)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Silent || len(sink.runs) != 1 {
		t.Fatalf("silent %v, stop %q, %d levels: want silent after the first", out.Silent, out.StopReason, len(sink.runs))
	}
	if run := sink.runs[0]; run.Steady || run.NotSteadyReason != "the server did not answer" {
		t.Errorf("steady %v, reason %q: want the server's silence", run.Steady, run.NotSteadyReason)
	}
}
