package sweep_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// TestClientBoundFlagged forces a client-bound level and follows the flag end to end:
// LevelRun.Client.Bound (sweep's self-diagnosis) → analysis Level.ClientBound and
// Valid = false → a warning in Result.Warnings → the Markdown report.
//
// The condition is forced hard: 2 × GOMAXPROCS goroutines spin on locked OS threads for the
// whole level, so the process uses every core it may (CPU utilisation ≈ 100% > 90%) and
// every runnable goroutine waits for the spinners' 10 ms preemption time slices (scheduling
// latency p99 ≥ 10 ms > 5 ms). Either threshold alone marks the level bound.
func TestClientBoundFlagged(t *testing.T) {
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
	client := newClient(t, url, 8)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := uint64(1)
			for !stop.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()

	proto := sweep.Protocol{
		Warmup: 100 * time.Millisecond, WarmupMax: 20 * time.Second,
		Duration: 500 * time.Millisecond, MaxDuration: 500 * time.Millisecond, MinRequests: 1,
		CITarget: 0.05, DrainTimeout: 20 * time.Second,
	}
	var sink memSink
	plan := sweep.Plan{Levels: []int{8}, Protocol: proto, Workload: fixedWorkload{out: 10}}
	if _, err := sweep.Run(context.Background(), nil, plan, client, &sink); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
	if len(sink.runs) != 1 {
		t.Fatalf("%d levels", len(sink.runs))
	}
	run := sink.runs[0]
	cs := run.Client
	if cs == nil {
		t.Fatal("no client self-diagnosis in LevelRun.Client")
	}
	t.Logf("client: CPU %.0f%%, sched p99 %s, conn_wait p99 %s: %s", 100*cs.CPUUtilization, cs.SchedLatencyP99, cs.ConnWaitP99, cs.Reason)
	if !cs.Bound || cs.Reason == "" {
		t.Fatalf("level not flagged client-bound: %+v", *cs)
	}
	if !hasNote(run, "client-bound") {
		t.Errorf("no client-bound note in %q", run.Notes)
	}

	levels := analysis.Summarize([]record.Level{{Run: sink.runs[0], Records: sink.records[0]}}, analysis.DefaultOptions())
	if !levels[0].ClientBound || levels[0].Valid {
		t.Fatalf("analysis level: client_bound %v valid %v, want true false", levels[0].ClientBound, levels[0].Valid)
	}
	res := analysis.Analyze(levels, analysis.Meta{}, analysis.DefaultOptions())
	warned := false
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w, "client-bound")
	}
	if !warned {
		t.Fatalf("no client-bound warning in %q", res.Warnings)
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, &res, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "client-bound: ") {
		t.Errorf("the Markdown report does not carry the client-bound warning:\n%s", md.String())
	}
}
