package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Schedule fixes every level of a sweep to the wall clock, so that several load generators
// (the shards of ShardConfig) run the same level at the same time without talking to each
// other. Level k (from 0) starts at Start + k × Period; its warmup lasts exactly Warmup and the load
// runs for the longest window, max(Duration, MaxDuration), then requests in flight
// DrainTimeout later are cancelled. No shard can tell alone whether the level is steady, so
// MergeLevel chooses the window afterwards exactly as one process would have: the shortest
// window of at least Duration (whole slices) with MinRequests completions that passes the
// steady-state test on the union of the shards' records. Stop rules other than the budget
// cannot be agreed on and are not applied.
type Schedule struct {
	// Start is when level 0 starts on every shard.
	Start time.Time
	// Shard and Shards say which part of each level's workers this process runs.
	Shard, Shards int
	// Clock, when set, reads this process's clock against the sweep's reference clock. The
	// runner calls it before every level, at most clockWindow (5 s) before the level, with a
	// context that ends shortly before the level's start, records what it returns in the
	// level (LevelRun.Clock), and runs the level on the reference clock: at LevelStart +
	// Offset on its own (a reading with an Error keeps the previous Offset, 0 before any).
	Clock func(ctx context.Context) record.ClockOffset
	// Skew is a test hook, set by no flag or configuration key: this process behaves as a
	// machine whose clock reads Skew ahead of the real one. Every time it records (records,
	// phase boundaries) is Skew later, and the schedule's instants, read on that clock, are
	// Skew earlier on the machine's.
	Skew time.Duration
	// readWindow, a test hook, replaces clockWindow (when not 0): how long before its
	// deadline a clock reading starts at the earliest.
	readWindow time.Duration
}

// scheduleSlack is added to every level of a schedule after its drain, for writing the level's
// records and results before the next level is due.
const scheduleSlack = time.Second

// Period is the time between the starts of two levels: warmup + the longest window +
// drain_timeout + cooldown + scheduleSlack.
func (s *Schedule) Period(p Protocol) time.Duration {
	return p.Warmup + scheduledWindow(p) + p.DrainTimeout + p.Cooldown + scheduleSlack
}

// LevelEnd is when level k's drain ends at the latest: its load ends drain_timeout before.
func (s *Schedule) LevelEnd(p Protocol, k int) time.Time {
	return s.LevelStart(p, k).Add(p.Warmup + scheduledWindow(p) + p.DrainTimeout)
}

// scheduledWindow is how long a shard loads the server after warmup: the longest window the
// one-process controller measures, max_duration (at least duration) in whole slices.
func scheduledWindow(p Protocol) time.Duration {
	slice := p.Duration / record.MinSlices
	if slice <= 0 {
		return p.Duration
	}
	return slice * time.Duration(maxSlices(p))
}

// maxSlices is the longest window in slices of duration ÷ MinSlices: max_duration, at least
// MinSlices (duration). p.Duration must be at least MinSlices nanoseconds.
func maxSlices(p Protocol) int {
	return max(record.MinSlices, int(p.MaxDuration/(p.Duration/record.MinSlices)))
}

// LevelStart is when level k starts.
func (s *Schedule) LevelStart(p Protocol, k int) time.Time {
	return s.Start.Add(time.Duration(k) * s.Period(p))
}

// Workers returns the workers of a level of concurrency c that shard i of n runs:
// first, first+1, …, first+count-1. The shards' ranges tile 0 … c-1 in order and differ in
// size by at most one.
func Workers(c, i, n int) (first, count int) {
	first = i * c / n
	return first, (i+1)*c/n - first
}

// LastLevel is the index of the last of n levels a shard runs within p's budget: a level starts
// only when its scheduled load ends within stop.budget of the agreed start (n−1 without a
// budget; at least 0).
func (s *Schedule) LastLevel(p Protocol, n int) int {
	last := n - 1
	for b := p.Stop.Budget; b > 0 && last > 0 && s.LevelEnd(p, last).Add(-p.DrainTimeout).Sub(s.Start) > b; {
		last--
	}
	return last
}

// Describe says, for the console, when shard (such as "0/2") runs the n levels of p: the
// first level's start, the period, and the end of the last level the budget admits; on a
// rate sweep, which arrivals of each level's one schedule the shard sends and its cap on
// requests in flight (ClockPlan says which clock it runs on).
func (s *Schedule) Describe(p Protocol, n int, shard string) string {
	last := s.LastLevel(p, n)
	out := fmt.Sprintf("shard %s: level 1 starts at %s, then one level every %s (warmup + max_duration + drain_timeout + cooldown + %s); level %d, the last to run, ends by %s. Stop rules other than stop.budget are not applied: the shards cannot agree on them.",
		shard, s.Start.UTC().Format(time.RFC3339Nano), s.Period(p), scheduleSlack,
		last+1, s.LevelEnd(p, last).UTC().Format(time.RFC3339Nano))
	if p.RateMode() {
		c := p.InFlightCap()
		_, count := Workers(c, s.Shard, s.Shards)
		out += fmt.Sprintf(" Each level is one arrival schedule for the %d shards: this shard sends arrivals %d, %d, %d, … of it, at most %d in flight (max_concurrency %d ÷ %d).",
			s.Shards, s.Shard, s.Shard+s.Shards, s.Shard+2*s.Shards, count, c, s.Shards)
	}
	return out
}
