package sweep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// TestShardClockInterrupt: the first interrupt (Run's interrupt context, not its ctx) ends a
// clock reading under way — one that would retry until 100 ms before the level, seconds
// away — and the sweep stops interrupted before the level (DESIGN §9). The Clock interrupts
// the sweep itself, then waits for its context to end: cancelled, not past its deadline.
func TestShardClockInterrupt(t *testing.T) {
	t.Parallel()
	interrupt, stop := context.WithCancel(context.Background())
	defer stop()
	var ended error
	sched := sweep.Schedule{Start: time.Now().Add(3 * time.Second), Shards: 2,
		Clock: func(ctx context.Context) record.ClockOffset {
			stop()
			<-ctx.Done()
			ended = ctx.Err()
			return record.ClockOffset{Server: "ref:1", Error: "no reading in time"}
		}}
	plan := sweep.Plan{Levels: []int{2}, Protocol: shortProtocol(), Workload: fixedWorkload{out: 2}, Schedule: &sched}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), interrupt, plan, newClient(t, "http://127.0.0.1:1", 1), sink)
	if err != nil || out.StopReason != sweep.StopInterrupted || !errors.Is(ended, context.Canceled) {
		t.Errorf("%v, stop %q, the reading ended by %v: want interrupted, the reading cancelled", err, out.StopReason, ended)
	}
	if len(sink.runs) != 0 {
		t.Errorf("%d levels ran, want none", len(sink.runs))
	}
}
