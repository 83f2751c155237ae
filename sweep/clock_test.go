package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// clockProtocol: warmup 100 ms capped at 300 ms, a window of 1 s to 2 s in 100 ms slices, a
// 50 ms drain.
func clockProtocol() Protocol {
	return Protocol{
		Warmup: 100 * time.Millisecond, WarmupMax: 300 * time.Millisecond,
		Duration: time.Second, MaxDuration: 2 * time.Second, DrainTimeout: 50 * time.Millisecond,
		MinRequests: 1, CITarget: 0.05,
	}
}

// clockLevel is the controller state a clock reads: c workers, n of them run here, the
// protocol's slices, and Unix nanoseconds counted from base.
func clockLevel(proto Protocol, c, n int, base time.Time) *level {
	return &level{c: c, n: n, warmNeed: int64(n), silentN: int64(n), proto: proto, clk: unixClock{base: base},
		slice: int64(proto.Duration) / record.MinSlices, kmax: maxSlices(proto)}
}

// TestFreeClockWarmup: warmup ends once warmup has elapsed and every worker has completed a
// request, whichever comes last, at that moment; at warmup_max it ends anyway, with a note.
func TestFreeClockWarmup(t *testing.T) {
	proto := clockProtocol()
	start := time.Now()
	at := func(d time.Duration) event { return event{now: start.Add(d)} }
	c := newLevelClock(proto, time.Time{}, start)
	if _, ok := c.(*freeClock); !ok {
		t.Fatalf("clock %T without a schedule, want the free-running clock", c)
	}
	if w := c.wake(record.PhaseWarmup, start); !w.Equal(start.Add(proto.Warmup)) {
		t.Errorf("wake at the start: %v, want warmup later", w.Sub(start))
	}
	if w := c.wake(record.PhaseWarmup, start.Add(proto.Warmup)); !w.Equal(start.Add(proto.WarmupMax)) {
		t.Errorf("wake after warmup: %v, want warmup_max after the start", w.Sub(start))
	}
	if w := c.wake(record.PhaseMeasure, start.Add(proto.Warmup)); !w.IsZero() {
		t.Errorf("wake in the window: %v, want none (the ticks decide)", w)
	}

	l := clockLevel(proto, 2, 2, start)
	l.firstDone.Store(2)
	if _, over := c.warmupEnd(l, at(50*time.Millisecond)); over {
		t.Error("warmup over before warmup elapsed")
	}
	l.firstDone.Store(1)
	if _, over := c.warmupEnd(l, at(150*time.Millisecond)); over {
		t.Error("warmup over with a worker that has not completed a request")
	}
	l.firstDone.Store(2)
	w0, over := c.warmupEnd(l, at(150*time.Millisecond))
	if want := l.clk.unix(start.Add(150 * time.Millisecond)); !over || w0 != want || len(l.notes) > 0 {
		t.Errorf("every worker done after warmup: W0 %d over %v notes %q, want %d, over, no note", w0, over, l.notes, want)
	}

	l = clockLevel(proto, 2, 2, start)
	l.firstDone.Store(1)
	w0, over = c.warmupEnd(l, event{now: start.Add(proto.WarmupMax), timer: true})
	if !over || w0 != l.clk.unix(start.Add(proto.WarmupMax)) || len(l.notes) != 1 ||
		l.notes[0] != "warmup capped at warmup_max (300ms): 1 of 2 workers had completed a request" {
		t.Errorf("at warmup_max: W0 %d over %v notes %q, want over with the cap's note", w0, over, l.notes)
	}

	proto.WarmupMax = 0
	c = newLevelClock(proto, time.Time{}, start)
	if w := c.wake(record.PhaseWarmup, start.Add(proto.Warmup)); !w.IsZero() {
		t.Errorf("no warmup_max: wake after warmup %v, want none", w)
	}
	if _, over := c.warmupEnd(l, at(time.Hour)); over {
		t.Error("no warmup_max: warmup over with a worker that has not completed a request")
	}
}

// TestFreeClockWindow: the window ends at the first candidate the steady-state test passes
// once the horizon has passed it, else at the longest window; the drain lasts drain_timeout
// however the window ended.
func TestFreeClockWindow(t *testing.T) {
	proto := clockProtocol()
	start := time.Now()
	c := newLevelClock(proto, time.Time{}, start)
	l := clockLevel(proto, 1, 1, start)
	l.run.W0 = l.clk.unix(start.Add(proto.Warmup))
	l.win = newWindow(l.run.W0, l.slice, record.MinSlices, l.kmax)
	// One 10-token request per 10 ms: a flat series, steady over any whole number of slices.
	for s := l.run.W0; s < l.longestEnd(); s += 10 * ms {
		r := record.Record{Sent: s, TTFT: 5 * time.Millisecond, E2E: 5 * time.Millisecond, OutputTokens: 10,
			Chunks: []int64{5000}, Status: record.StatusOK}
		l.win.add(&r)
	}
	now := event{now: start.Add(proto.Warmup + proto.Duration)}
	l.horizon = l.run.W0 + int64(proto.Duration) - 1
	if w1, over := c.windowEnd(l, now); over {
		t.Fatalf("window over at W0+%v with the horizon 1 ns short of duration", time.Duration(w1-l.run.W0))
	}
	l.horizon = l.run.W0 + int64(proto.Duration)
	if w1, over := c.windowEnd(l, now); !over || w1 != l.run.W0+int64(proto.Duration) {
		t.Errorf("steady window: over %v at W0+%v, want duration", over, time.Duration(w1-l.run.W0))
	}

	// Nothing steady (no tokens at all): the longest window, once its end has come.
	l.win = newWindow(l.run.W0, l.slice, record.MinSlices, l.kmax)
	l.horizon = l.longestEnd()
	if _, over := c.windowEnd(l, event{now: start.Add(proto.Warmup + proto.MaxDuration - time.Millisecond)}); over {
		t.Error("unsteady window over before max_duration")
	}
	if w1, over := c.windowEnd(l, event{now: start.Add(proto.Warmup + proto.MaxDuration)}); !over || w1 != l.longestEnd() {
		t.Errorf("unsteady window: over %v at W0+%v, want max_duration", over, time.Duration(w1-l.run.W0))
	}

	stopped := start.Add(time.Second)
	for _, end := range []levelEnd{endNormal, endInterrupt, endBudget} {
		if d := c.drainEnd(stopped, end); !d.Equal(stopped.Add(proto.DrainTimeout)) {
			t.Errorf("end %d: drain ends %v after issuing stopped, want drain_timeout", end, d.Sub(stopped))
		}
	}
}

// TestScheduledClock: a shard's level keeps the schedule's times — W0 at the scheduled end
// of warmup whatever its workers did (with a note when some had not completed a request), W1
// at the end of the longest window, the drain ending at the scheduled time — except that a
// level cut short drains for drain_timeout from the cut.
func TestScheduledClock(t *testing.T) {
	proto := clockProtocol()
	sched := &Schedule{Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), Shard: 1, Shards: 2}
	levelAt := sched.LevelStart(proto, 1)
	w0At := levelAt.Add(proto.Warmup)
	w1At := w0At.Add(scheduledWindow(proto))
	c := newLevelClock(proto, levelAt, time.Now())
	if _, ok := c.(*scheduledClock); !ok {
		t.Fatalf("clock %T with a schedule, want the scheduled clock", c)
	}
	if w := c.wake(record.PhaseWarmup, levelAt); !w.Equal(w0At) {
		t.Errorf("warmup wake %v, want the scheduled W0 %v", w, w0At)
	}
	if w := c.wake(record.PhaseMeasure, w0At); !w.Equal(w1At) {
		t.Errorf("window wake %v, want the scheduled W1 %v", w, w1At)
	}

	l := clockLevel(proto, 3, 2, levelAt)
	l.firstDone.Store(2)
	if _, over := c.warmupEnd(l, event{now: w0At.Add(time.Millisecond)}); over {
		t.Error("warmup over on a tick: only the scheduled time ends it")
	}
	l.firstDone.Store(1)
	w0, over := c.warmupEnd(l, event{now: w0At.Add(3 * time.Millisecond), timer: true})
	if !over || w0 != w0At.UnixNano() || len(l.notes) != 1 || !strings.HasPrefix(l.notes[0], warmupLateNote+", 1 of this shard's 2 workers") {
		t.Errorf("scheduled W0: %d over %v notes %q, want %d exactly and a note on the late worker", w0, over, l.notes, w0At.UnixNano())
	}

	l.run.W0 = w0
	if l.longestEnd() != w1At.UnixNano() {
		t.Fatalf("the runner's longest window ends at %d, the schedule's at %d", l.longestEnd(), w1At.UnixNano())
	}
	l.win = newWindow(l.run.W0, l.slice, record.MinSlices, l.kmax)
	if _, over := c.windowEnd(l, event{now: w1At.Add(-time.Millisecond)}); over {
		t.Error("window over before the scheduled W1")
	}
	for _, ev := range []event{{now: w1At.Add(-time.Millisecond), timer: true}, {now: w1At}} {
		if w1, over := c.windowEnd(l, ev); !over || w1 != w1At.UnixNano() {
			t.Errorf("%+v: window over %v at %d, want the scheduled W1 %d", ev, over, w1, w1At.UnixNano())
		}
	}

	stopped := w1At.Add(2 * time.Millisecond)
	if d := c.drainEnd(stopped, endNormal); !d.Equal(w1At.Add(proto.DrainTimeout)) {
		t.Errorf("drain ends %v after W1, want drain_timeout after the scheduled W1", d.Sub(w1At))
	}
	if d := c.drainEnd(stopped, endInterrupt); !d.Equal(stopped.Add(proto.DrainTimeout)) {
		t.Errorf("interrupted: drain ends %v after the cut, want drain_timeout", d.Sub(stopped))
	}
}
