package sweep

import (
	"time"

	"github.com/kneecap/kneecap/record"
)

// A levelClock says when the phases of a level end (DESIGN §3): the end of warmup (W0), the
// end of the measurement window (W1) and the end of the drain, when requests still in flight
// are cancelled. The runner's controller asks it at every event of a phase — a tick (the
// workers' records just collected), the clock's own wake time, every worker's first
// completion — and the clock answers from the level's state. Two clocks exist: freeClock, one
// process deciding for itself, and scheduledClock, one shard of Plan.Schedule on fixed
// wall-clock times. Every executor's levels (executor.go) keep the same clocks.
type levelClock interface {
	// wake returns when the clock must be asked during phase even if nothing else happens
	// (the zero time: not before the next tick or worker event), as seen at now.
	wake(phase record.Phase, now time.Time) time.Time
	// warmupEnd is asked at each event of the warmup. When the warmup is over it returns W0
	// (Unix nanoseconds) and true, having added any note on how it ended to the level.
	warmupEnd(l *level, ev event) (w0 int64, over bool)
	// windowEnd is asked at each event of the measurement, W0 set. When the window is over
	// it returns W1 (Unix nanoseconds, at most l.longestEnd()) and true.
	windowEnd(l *level, ev event) (w1 int64, over bool)
	// drainEnd returns when the requests still in flight are cancelled, issuing having
	// stopped at stopped; end says how the measurement ended.
	drainEnd(stopped time.Time, end levelEnd) time.Time
}

// event is one wake-up of a level's controller.
type event struct {
	now   time.Time // when it is handled (with a monotonic reading)
	timer bool      // the clock's wake time has come
}

// newLevelClock returns the clock of a level measured by proto (a trace level's: whole
// passes, traceLevelProtocol), whose workers started at start: the scheduled clock of a
// shard's level scheduled at at (on this machine's clock), else (at zero) the free-running
// clock.
func newLevelClock(proto Protocol, at, start time.Time) levelClock {
	if !at.IsZero() {
		w0 := at.Add(proto.Warmup)
		w1 := w0.Add(scheduledWindow(proto))
		return &scheduledClock{w0At: w0, w1At: w1, drainBy: w1.Add(proto.DrainTimeout), drainTimeout: proto.DrainTimeout}
	}
	c := &freeClock{warmupAt: start.Add(proto.Warmup), drainTimeout: proto.DrainTimeout, warmupMax: proto.WarmupMax}
	if proto.WarmupMax > 0 {
		c.capAt = start.Add(proto.WarmupMax)
	}
	return c
}

// freeClock is the clock of a level that one process runs with all its workers. Warmup lasts
// until warmup has elapsed and every worker has completed a request (a rate level: one
// request), capped by warmup_max
// (with a note); W1 is the end of the first candidate window that passes the steady-state
// test with min_requests completions (window.decide) — on a rate level, whose realised
// arrival rate is also within MaxRealizedOff of the offered — else the longest window,
// max_duration; the drain lasts at most drain_timeout.
type freeClock struct {
	warmupAt     time.Time     // start + warmup
	capAt        time.Time     // start + warmup_max; zero without a cap
	warmupMax    time.Duration // for the note
	drainTimeout time.Duration
	gated        bool // the window's accept condition is set
}

func (c *freeClock) wake(phase record.Phase, now time.Time) time.Time {
	switch {
	case phase != record.PhaseWarmup:
		return time.Time{}
	case now.Before(c.warmupAt):
		return c.warmupAt
	}
	return c.capAt
}

func (c *freeClock) warmupEnd(l *level, ev event) (int64, bool) {
	if !ev.now.Before(c.warmupAt) && l.firstDone.Load() >= l.warmNeed {
		return l.clk.unix(ev.now), true
	}
	if !c.capAt.IsZero() && !ev.now.Before(c.capAt) {
		if l.run.Mode().IsRate() {
			l.note("warmup capped at warmup_max (%s): no request had completed", c.warmupMax)
		} else {
			l.note("warmup capped at warmup_max (%s): %d of %d workers had completed a request",
				c.warmupMax, l.firstDone.Load(), l.c)
		}
		return l.clk.unix(ev.now), true
	}
	return 0, false
}

func (c *freeClock) windowEnd(l *level, ev event) (int64, bool) {
	if !c.gated {
		// A rate level's candidate windows must also realise its offered rate (realized.go).
		c.gated, l.win.accept = true, l.realizedGate()
	}
	if k := l.win.decide(l.horizon, l.proto.MinRequests, l.proto.CITarget); k > 0 {
		return l.run.W0 + l.slice*int64(k), true
	}
	if end := l.longestEnd(); l.clk.unix(ev.now) >= end {
		l.realizedShortNote(end)
		return end, true
	}
	return 0, false
}

func (c *freeClock) drainEnd(stopped time.Time, _ levelEnd) time.Time {
	return stopped.Add(c.drainTimeout)
}

// warmupLateNote starts a shard's note that some of its workers had not completed a request
// by the scheduled end of warmup (the merge then starts the window later: see MergeLevel).
const warmupLateNote = "at the scheduled end of warmup"

// scheduledClock is the clock of one shard's part of a level on a Schedule: the window is
// [w0At, w1At) on every shard, w1At − w0At being the longest window, never decided or
// extended, and the drain ends at drainBy unless the level was cut short. Steadiness is
// judged by MergeLevel on the union of the shards' records.
type scheduledClock struct {
	w0At, w1At, drainBy time.Time
	drainTimeout        time.Duration
}

func (c *scheduledClock) wake(phase record.Phase, _ time.Time) time.Time {
	if phase == record.PhaseWarmup {
		return c.w0At
	}
	return c.w1At
}

func (c *scheduledClock) warmupEnd(l *level, ev event) (int64, bool) {
	if !ev.timer {
		return 0, false
	}
	switch k := l.firstDone.Load(); {
	case k >= l.warmNeed:
	case l.sched != nil:
		l.note(warmupLateNote + ", none of this shard's requests had completed")
	default:
		l.note(warmupLateNote+", %d of this shard's %d workers had not completed a request", int64(l.n)-k, l.n)
	}
	return c.w0At.UnixNano(), true
}

func (c *scheduledClock) windowEnd(l *level, ev event) (int64, bool) {
	if end := l.longestEnd(); ev.timer || l.clk.unix(ev.now) >= end {
		return end, true
	}
	return 0, false
}

func (c *scheduledClock) drainEnd(stopped time.Time, end levelEnd) time.Time {
	if end == endNormal {
		return c.drainBy // = drain_timeout after W1 unless the window ended late
	}
	return stopped.Add(c.drainTimeout)
}

// alarm is a timer for a clock's wake time, armed anew when the time changes.
type alarm struct {
	t  *time.Timer
	at time.Time
	c  <-chan time.Time // nil when not armed or fired
}

// set arms the alarm for at (the zero time: none) unless it is already set for it.
func (a *alarm) set(at time.Time) {
	if at.Equal(a.at) {
		return
	}
	a.stop()
	a.at, a.c = at, nil
	if !at.IsZero() {
		a.t = time.NewTimer(time.Until(at))
		a.c = a.t.C
	}
}

func (a *alarm) stop() {
	if a.t != nil {
		a.t.Stop()
	}
}
