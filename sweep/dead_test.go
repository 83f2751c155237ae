package sweep_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// TestInterruptBoundsTheDrain interrupts a sweep whose requests take 20 s and whose
// drain_timeout is a minute, once during the load and once during the drain of a level that
// ended at max_duration: either way the drain ends InterruptDrainTimeout after the interrupt,
// cancelling what is in flight, and the sweep stops as interrupted.
func TestInterruptBoundsTheDrain(t *testing.T) {
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
