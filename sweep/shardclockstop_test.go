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

// TestShardClockNotReadPastBudget: a level the budget refuses takes no clock reading (which
// may retry an unreachable server until shortly before the level): the budget does not
// depend on the offset. Level 0's load ends warmup + duration after start_at, past a budget
// of half that.
func TestShardClockNotReadPastBudget(t *testing.T) {
	t.Parallel()
	readings := 0
	sched := sweep.Schedule{Start: time.Now().Add(time.Second), Shards: 2,
		Clock: func(context.Context) record.ClockOffset { readings++; return record.ClockOffset{} }}
	proto := shortProtocol()
	proto.Stop.Budget = (proto.Warmup + proto.Duration) / 2
	plan := sweep.Plan{Levels: []int{2}, Protocol: proto, Workload: fixedWorkload{out: 2}, Schedule: &sched}
	out, err := sweep.Run(context.Background(), context.Background(), plan, newClient(t, "http://127.0.0.1:1", 1), &memSink{})
	if err != nil || out.StopReason != sweep.StopBudget || readings != 0 {
		t.Errorf("%v, stop %q, %d readings: want the budget's stop and none", err, out.StopReason, readings)
	}
}
