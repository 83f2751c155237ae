package sweep

import (
	"context"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// clockScript is a Schedule.Clock that returns readings in turn and records, for each, when
// it was called and the deadline of its context.
type clockScript struct {
	readings        []record.ClockOffset
	calls, deadline []time.Time
}

func (c *clockScript) read(ctx context.Context) record.ClockOffset {
	d, _ := ctx.Deadline()
	c.calls, c.deadline = append(c.calls, time.Now()), append(c.deadline, d)
	return c.readings[len(c.calls)-1]
}

// TestShardPlanReadsLate: a reading starts at most the read window before its deadline, not
// when the sweep starts (level 1's schedule may be hours away): with the level 400 ms away and
// a window of 100 ms, the Clock is called no earlier than 100 ms before its deadline.
func TestShardPlanReadsLate(t *testing.T) {
	t.Parallel()
	c := &clockScript{readings: []record.ClockOffset{{Server: "ref:1", Offset: 1}}}
	const window = 100 * time.Millisecond
	s := &Schedule{Start: time.Now().Add(400 * time.Millisecond), Shards: 2, Clock: c.read, readWindow: window}
	r := &controller{ctx: context.Background(), interrupt: context.Background()}
	if _, _, why := r.shardPlan(&Plan{Protocol: shortProtocolInternal(), Schedule: s}, 0); why != "" || len(c.calls) != 1 {
		t.Fatalf("%q, %d readings: want one", why, len(c.calls))
	}
	if from := c.deadline[0].Add(-window); c.calls[0].Before(from) {
		t.Errorf("read %v before its deadline, want at most %v", c.deadline[0].Sub(c.calls[0]), window)
	}
}

// shortProtocolInternal is a level protocol for tests that run no level.
func shortProtocolInternal() Protocol {
	return Protocol{Warmup: 240 * time.Millisecond, Duration: time.Second, MaxDuration: time.Second,
		MinRequests: 1, CITarget: 0.05, DrainTimeout: time.Second}
}
