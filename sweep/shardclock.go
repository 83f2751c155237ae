package sweep

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/kneecap/kneecap/record"
)

// A shard's clock (DESIGN §8): the shards of a sweep agree on each level's start on the
// reference clock (Schedule.LevelStart). Before every level a shard reads its clock against it
// (Schedule.Clock) and runs the level at that start + the offset it read, on its own clock;
// Schedule.Skew, a test hook, makes the process a machine whose clock reads Skew ahead.

// clockLead is how long before a level's start on this machine the clock reading must end:
// the level then starts on time.
const clockLead = 100 * time.Millisecond

// ClockPlan says, for the console after Schedule.Describe, which clock a shard runs its
// levels on: with a clock server (server, shard.clock_server), the offset it reads before each
// level; without one, its own clock, trusted to agree with the others'.
func ClockPlan(server string) string {
	if server == "" {
		return "It trusts this machine's clock (NTP; no --clock-server): each level runs at its agreed start on it."
	}
	return fmt.Sprintf("Before each level it reads its clock against the clock server %s (from at most %s before the level, stopping %s before it) and runs the level at its agreed start + the offset read, on this machine's clock.",
		server, clockWindow, clockLead)
}

// scheduledStart readies level index of p, on a Schedule, and waits for its start: the
// budget first — it does not depend on the offset, the load's end and the budget's start
// (start_at) moving with it alike — so that a level it refuses takes no reading; then the
// plan on this machine's clock and its reading (shardPlan), and the wait for the level's
// start there. It returns what levelStart does.
func (r *controller) scheduledStart(p *Plan, index int) (*Plan, *record.ClockOffset, time.Time, string) {
	s, pr := p.Schedule, p.Protocol
	if b := pr.Stop.Budget; b > 0 && s.LevelEnd(pr, index).Add(-pr.DrainTimeout).Sub(s.Start) > b {
		return p, nil, time.Time{}, StopBudget
	}
	p, clock, why := r.shardPlan(p, index)
	if why != "" {
		return p, nil, time.Time{}, why
	}
	at := p.Schedule.LevelStart(p.Protocol, index)
	return p, clock, at, wait(r.ctx, r.interrupt, time.Until(at))
}

// clockWindow is how long before its deadline a reading starts at the earliest: a reading
// taken long before its level (level 1's, when start_at is minutes or hours away) would run
// the level on a stale offset — a crystal's 10–50 ppm drift 3–15 ms in 5 minutes, 0.25 µs in
// 5 s — while 5 s leave time for the retries of a clock server that starts late (1 s to
// connect, at most 200 ms between attempts).
const clockWindow = 5 * time.Second

// shardPlan returns the plan that runs level index of p (on a Schedule) on this machine's
// clock, and the clock reading taken for it (nil without Schedule.Clock), or a reason to stop
// (an interrupt). The reading is taken with a context that ends clockLead before the level's
// start on this machine (at once when that has passed), or at the first interrupt (the wait
// that follows then stops), after waiting until clockWindow before that deadline; a reading
// without an Error sets the offset, one with an Error — or with an offset beyond
// record.MaxClockOffset, which gets one — keeps the previous one (0 before any) and records
// it as its Offset. The returned plan's Schedule starts at Start + offset − Skew
// on the machine: every instant of the level derived from it — its start, warmup, window,
// drain, the missed-schedule check, the budget — is so moved alike.
func (r *controller) shardPlan(p *Plan, index int) (*Plan, *record.ClockOffset, string) {
	s := *p.Schedule
	var reading *record.ClockOffset
	if s.Clock != nil {
		at := s.LevelStart(p.Protocol, index).Add(r.clockOffset - s.Skew)
		from := cmp.Or(s.readWindow, clockWindow)
		if why := wait(r.ctx, r.interrupt, time.Until(at.Add(-clockLead-from))); why != "" {
			return p, nil, why
		}
		ctx, cancel := context.WithDeadline(r.ctx, at.Add(-clockLead))
		stop := context.AfterFunc(r.interrupt, cancel) // the first interrupt ends it too
		c := s.Clock(ctx)
		stop()
		cancel()
		if d := time.Duration(c.Offset); c.Error == "" && (d > record.MaxClockOffset || d < -record.MaxClockOffset) {
			c.Error = fmt.Sprintf("offset %v: more than the %v a shard's clock may be off", d, record.MaxClockOffset)
		}
		if c.Error == "" {
			r.clockOffset = time.Duration(c.Offset)
		} else {
			c.Offset = int64(r.clockOffset)
		}
		reading = &c
	}
	s.Start = s.Start.Add(r.clockOffset - s.Skew)
	q := *p
	q.Schedule = &s
	return &q, reading, ""
}

// skewed moves a level's phase boundaries and records, as this process measured them on the
// machine's clock, onto the clock it plays (Schedule.Skew later): once, as they are handed
// over.
func skewed(run *record.LevelRun, records []record.Record, skew time.Duration) {
	if skew == 0 {
		return
	}
	run.Shift(int64(skew))
	for i := range records {
		records[i].Shift(int64(skew))
	}
}
