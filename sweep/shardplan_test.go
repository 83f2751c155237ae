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

// TestShardPlanOffset: the level runs at LevelStart + offset − Skew on the machine, the offset
// being the last reading without an Error: a reading with one keeps the previous offset (0
// before any) and records it as its Offset; so does one beyond record.MaxClockOffset, which
// is given an Error naming it. Each reading is due clockLead before the level's
// start on the machine as the offset so far puts it. Level 0's schedule has passed: no wait.
func TestShardPlanOffset(t *testing.T) {
	const skew, offset = 50 * time.Millisecond, 20 * time.Millisecond
	c := &clockScript{readings: []record.ClockOffset{
		{Server: "ref:1", Error: "no reading in time", Offset: 7},
		{Server: "ref:1", Offset: int64(offset)},
		{Server: "ref:1", Error: "no reading in time", Offset: 12345},
		{Server: "ref:1", Offset: int64(-record.MaxClockOffset - time.Nanosecond)},
	}}
	s := &Schedule{Start: time.Now().Add(-time.Hour), Shards: 2, Skew: skew, Clock: c.read}
	p := &Plan{Protocol: shortProtocolInternal(), Schedule: s}
	r := &controller{ctx: context.Background(), interrupt: context.Background()}
	ran := []time.Duration{0, 0, offset, offset}       // the offset each reading is asked with
	want := []time.Duration{0, offset, offset, offset} // the offset each level runs on
	wantErr := []string{c.readings[0].Error, "", c.readings[2].Error,
		"offset -1h0m0.000000001s: more than the 1h0m0s a shard's clock may be off"}
	for k := range c.readings {
		q, got, why := r.shardPlan(p, k)
		if why != "" || got == nil || got.Offset != int64(want[k]) || got.Error != wantErr[k] {
			t.Fatalf("level %d: %q, reading %+v: want offset %v, error %q", k, why, got, want[k], wantErr[k])
		}
		if start := s.Start.Add(want[k] - skew); !q.Schedule.Start.Equal(start) {
			t.Errorf("level %d: starts %v, want %v (Start + offset − Skew)", k, q.Schedule.Start.Sub(s.Start), want[k]-skew)
		}
		if due := s.LevelStart(p.Protocol, k).Add(ran[k] - skew - clockLead); !c.deadline[k].Equal(due) {
			t.Errorf("level %d: reading due %v, want %v", k, c.deadline[k], due)
		}
	}
}
