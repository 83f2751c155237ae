package sweep

import (
	"fmt"
	"time"

	"github.com/kneecap/kneecap/record"
)

// schedule is a rate level's arrival times: arrival k is due at the level's start + the sum
// of the first k + 1 gaps, an absolute time. The dispatcher walks one; the controller
// replays another to count a window's arrivals (arrivalCount): the gaps depend only on the
// arrival process, the rate and the level, so both give the same times. A shard's
// dispatcher walks the one global schedule and takes only its own arrivals (DESIGN §8).
type schedule struct {
	at   time.Time
	k    int // the index of the arrival due at at: −1 before the first
	gaps func() time.Duration
	// shard and shards: next returns only the arrivals k ≡ shard (mod shards).
	shard, shards int
}

// newSchedule returns the schedule of the rate level l from its start — on a Schedule, its
// scheduled start, with this shard's arrivals only; else its WarmupStart, every arrival.
func (l *level) newSchedule() *schedule {
	s := &schedule{at: l.begun, k: -1, gaps: l.sched.gaps(), shards: 1}
	if !l.scheduledAt.IsZero() {
		s.at = l.scheduledAt
		s.shard, s.shards = l.run.Shard.Index, l.run.Shard.Count
	}
	return s
}

// next returns the next arrival's index and due time.
func (s *schedule) next() (int, time.Time) {
	for {
		s.at = s.at.Add(s.gaps())
		s.k++
		if s.k%s.shards == s.shard {
			return s.k, s.at
		}
	}
}

// arrivalCount counts the arrivals a rate level's schedule draws from w0 on, by replaying it:
// O(arrivals) over the level, whatever the number of windows asked about.
type arrivalCount struct {
	sch  *schedule
	clk  unixClock
	w0   int64
	next int64 // the first arrival not yet counted (Unix ns)
	n    int   // the arrivals counted, in [w0, next)
}

// newArrivalCount returns the count of l's arrivals from w0 (Unix ns, l's clock).
func (l *level) newArrivalCount(w0 int64) *arrivalCount {
	c := &arrivalCount{sch: l.newSchedule(), clk: l.clk, w0: w0}
	c.next = c.unixNext()
	return c
}

// below returns the arrivals in [w0, t); t must not decrease from one call to the next.
func (c *arrivalCount) below(t int64) int {
	for ; c.next < t; c.next = c.unixNext() {
		if c.next >= c.w0 {
			c.n++
		}
	}
	return c.n
}

// unixNext returns the time of the schedule's next arrival (Unix ns).
func (c *arrivalCount) unixNext() int64 {
	_, at := c.sch.next()
	return c.clk.unix(at)
}

// realized returns the realised rate of the window [w0, w1): its arrivals ÷ its length.
func (c *arrivalCount) realized(w1 int64) float64 {
	return float64(c.below(w1)) / record.WindowSeconds(c.w0, w1)
}

// realizedGate returns the condition a candidate window of k slices of a rate level must also
// meet (window.accept): its realised rate within MaxRealizedOff of the offered
// (RealizedWithin). A trace level,
// whose window is a whole number of passes of the recorded traffic, has none (nil).
func (l *level) realizedGate() func(k int) bool {
	if l.sched == nil || !l.sched.realize {
		return nil
	}
	c := l.newArrivalCount(l.run.W0)
	l.sched.count = c
	return realizedGateOf(c.realized, l.run.W0, l.slice, l.sched.rps)
}

// realizedGateOf is the realised-rate condition on a candidate window [w0, w0 + k slices) of
// a rate level offering rps requests/s, its realised rate realized(w1) (its arrivals ÷ its
// length): within MaxRealizedOff of rps (RealizedWithin). The controller counts the
// schedule's arrivals (arrivalCount), a merge the merged records' scheduled times.
func realizedGateOf(realized func(w1 int64) float64, w0, slice int64, rps float64) func(k int) bool {
	return func(k int) bool {
		w1 := w0 + slice*int64(k)
		return record.RealizedWithin(realized(w1), rps, record.WindowSeconds(w0, w1))
	}
}

// realizedShortNote notes, when a rate level's window ends at w1 with its realised rate
// still not RealizedWithin the offered (it reached max_duration first), that it
// did; the analysis says by how much (DESIGN §4.15). A level without a realizedGate (a closed
// loop's, a trace replay's) gets none.
func (l *level) realizedShortNote(w1 int64) {
	if l.sched == nil {
		return
	}
	if c := l.sched.count; c != nil {
		if note := realizedShort(c.realized, c.w0, w1, l.proto.MaxDuration, l.sched.rps); note != "" {
			l.notes = append(l.notes, note)
		}
	}
}

// realizedShort is the note of a rate level whose window [w0, w1) did not realise the
// offered rps (realized as in realizedGateOf): realizedShortText; "" when it did, or the
// window is empty.
func realizedShort(realized func(w1 int64) float64, w0, w1 int64, maxDuration time.Duration, rps float64) string {
	if w1 <= w0 {
		return ""
	}
	if got := realized(w1); !record.RealizedWithin(got, rps, record.WindowSeconds(w0, w1)) {
		return realizedShortText(maxDuration, got, rps)
	}
	return ""
}

// realizedShortText is the note of a rate level whose window reached max_duration realising
// got requests/s of the offered rps, not RealizedWithin it.
func realizedShortText(maxDuration time.Duration, got, rps float64) string {
	return fmt.Sprintf("the window reached max_duration (%s) with the realised arrival rate %.3g requests/s, %+.1f%% off the offered %.3g (more than %.0f%%)",
		maxDuration, got, 100*(got/rps-1), rps, 100*record.MaxRealizedOff)
}
