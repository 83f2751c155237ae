package sweep

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// The executors (DESIGN §3, §3.9): how a level's requests are issued, the one thing the load
// modes do differently. The closed loop, the open loop and the trace replay share one level
// lifecycle — warmup, window, drain, stop, refine — that of the level runner (runner.go) and
// the controller (run.go), as k6's executors share a test's stages and vegeta's Pacer its
// attack. Each level sits at an x on the load axis: a concurrency, or an offered rate in
// requests/s (a trace replay's too: its time scale × the trace's mean rate).

// executor issues the requests of a sweep's levels.
type executor interface {
	// name names the level at x in messages: "concurrency 8", "2.5 requests/s".
	name(x float64) string
	// newLevel prepares level index of p at x: the mailboxes of its workers or slots, and
	// the protocol it is measured by.
	newLevel(ctx context.Context, p *Plan, client record.Client, index int, x float64) *level
	// start starts issuing l's requests, every goroutine counted in l.wg, until l.stop is
	// closed or l's requests are cancelled.
	start(l *level)
}

// executor returns the plan's executor: the open loop when it has Rates (a trace replay when
// it has a Trace too), else the closed loop.
func (p *Plan) executor() executor {
	if len(p.Rates) == 0 {
		return closedLoop{}
	}
	o := openLoop{arrival: p.Arrival, cap: inFlightCap(p.MaxConcurrency)}
	if p.Trace != nil {
		return traceReplay{openLoop: o, trace: p.Trace}
	}
	return o
}

// plannedX returns the x of the planned levels: Rates on a rate sweep, else Levels.
func (p *Plan) plannedX() []float64 {
	if len(p.Rates) > 0 {
		return p.Rates
	}
	xs := make([]float64, len(p.Levels))
	for i, c := range p.Levels {
		xs[i] = float64(c)
	}
	return xs
}

// runX returns the x a level ran at: its offered rate on an open loop, else its concurrency.
func runX(run *record.LevelRun) float64 {
	if run.Mode().IsRate() {
		return run.OfferedRPS
	}
	return float64(run.Concurrency)
}

// closedLoop is the closed loop's executor: level x runs x workers (a shard its part of
// them), each sending its next request when its last one ended and ThinkTime has passed
// (work).
type closedLoop struct{}

func (closedLoop) name(x float64) string { return "concurrency " + strconv.Itoa(int(x)) }

func (closedLoop) newLevel(ctx context.Context, p *Plan, client record.Client, index int, x float64) *level {
	return newLevel(ctx, p, client, index, int(x))
}

func (closedLoop) start(l *level) {
	l.wg.Add(l.n)
	for w := l.first; w < l.first+l.n; w++ {
		go l.work(w)
	}
}

// pause waits d (nothing when d ≤ 0) and reports false when the level stopped issuing or was
// cancelled meanwhile.
func (l *level) pause(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stop:
		return false
	case <-l.reqCtx.Done():
		return false
	}
}

// work is worker w's closed loop: send, read to the end, record, think, repeat until stop.
func (l *level) work(w int) {
	defer l.wg.Done()
	box := l.boxes[w-l.first]
	// Stagger the first requests evenly over the warmup: c loops started together stay
	// phase-locked under a steady server (every completion arrives in bursts of c), which
	// biases counts over a window that is not a multiple of the cycle.
	d := time.Duration(int64(l.stagger) * int64(w) / int64(l.c))
	if !l.scheduledAt.IsZero() {
		d = time.Until(l.scheduledAt.Add(d))
	}
	if !l.pause(d) {
		return
	}
	refused := 0 // consecutive connect errors: the server may be down (dead.go)
	failed := 0  // consecutive failed requests: they back off (failureBackoff)
	sess := newSession(l.workload, l.index, w, &l.cuts)
	var pause time.Duration // the pause before the next request (Record.Pause)
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		case <-l.reqCtx.Done():
			return
		default:
		}
		var req record.Request
		if sess != nil {
			req = sess.next()
		} else {
			req = l.workload.Next(l.index, w, seq)
		}
		rec := record.Record{Level: l.index, Concurrency: l.c, Worker: w, Seq: seq, Sent: l.clk.now(), Pause: pause}
		if sess != nil {
			rec.Session, rec.Turn = sess.id, sess.turn+1
		}
		l.do(box, &req, &rec)
		if rec.ErrorClass == record.ErrConnect {
			refused++
		} else {
			refused = 0
		}
		box.mu.Lock()
		box.recs = append(box.recs, rec)
		box.since = 0
		switch refused {
		case 0:
			box.downSince = 0
		case 1:
			box.downSince = rec.Done()
		}
		box.mu.Unlock()
		l.health.ended(&rec, seq == 0)
		if seq == 0 && l.firstDone.Add(1) == l.warmNeed {
			close(l.warm)
		}
		think := l.think
		if sess != nil {
			think = sess.ended(&req, &rec, think)
		}
		if rec.Status == record.StatusError {
			failed++
		} else {
			failed = 0
		}
		// A failure backs off (a server that fails at once is not hammered), at least as long
		// as its Retry-After asked; Pause records it on the next request.
		pause = think + max(failureBackoff(failed), rec.RetryAfter)
		if !l.pause(pause) {
			return
		}
	}
}

// openLoop is the open loop's executor (DESIGN §3.9): level x offers x requests/s on an
// arrival schedule of arrival's gaps, whatever the server does, at most cap of them in flight
// (dispatch.go).
type openLoop struct {
	arrival Arrival
	cap     int
}

func (openLoop) name(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) + " requests/s" }

func (o openLoop) newLevel(ctx context.Context, p *Plan, client record.Client, index int, x float64) *level {
	l := newLevel(ctx, p, client, index, o.cap)
	l.initSchedule(o.arrival, x)
	return l
}

func (openLoop) start(l *level) {
	l.wg.Add(1)
	go l.dispatch()
}

// traceReplay is a trace replay's executor (DESIGN §3.9): an open loop whose schedule is the
// trace's window, its recorded arrival times ÷ the time scale that makes its mean rate x,
// looped; a level measures whole passes of it (traceLevelProtocol).
type traceReplay struct {
	openLoop
	trace *workload.Trace
}

func (t traceReplay) newLevel(ctx context.Context, p *Plan, client record.Client, index int, x float64) *level {
	scale := t.trace.Scale(x)
	q := *p
	var passNote string
	q.Protocol, passNote = traceLevelProtocol(t.trace, p.Protocol, scale, p.Schedule != nil)
	l := t.openLoop.newLevel(ctx, &q, client, index, x)
	if passNote != "" {
		l.notes = append(l.notes, passNote)
	}
	l.sched.gaps = func() func() time.Duration { return t.trace.Gaps(scale) }
	l.sched.realize = false
	l.run.TimeScale = scale
	return l
}

// traceLevelProtocol is the protocol of a trace level at scale s: its window a whole number of
// passes P = Pass ÷ s, the fewest that reach duration, ⌈duration ÷ P⌉ × P, and at most
// max_duration (fewer passes when more would pass it) — on a Schedule (scheduled), at most the
// scheduled window, max_duration in whole slices, so that the level ends within its slot;
// duration and max_duration are both set to it (the window does not grow while the
// steady-state test fails: a trace level is judged by its backlog, DESIGN §3.9). A pass longer
// than that limit makes the window one pass, and note says so (a Schedule refuses it:
// TraceProblem).
func traceLevelProtocol(t *workload.Trace, p Protocol, s float64, scheduled bool) (q Protocol, note string) {
	pass := tracePass(t, s)
	if pass <= 0 {
		return p, ""
	}
	limit := max(p.MaxDuration, p.Duration)
	if scheduled {
		limit = scheduledWindow(p)
	}
	k := max(1, (p.Duration+pass-1)/pass)
	if k*pass > limit {
		k = max(1, limit/pass)
	}
	if k*pass > limit {
		note = fmt.Sprintf("one pass of the trace's window at time scale %g lasts %v, longer than sweep.max_duration %v: the level measures one pass", s, pass.Round(time.Millisecond), limit)
	}
	p.Duration, p.MaxDuration = k*pass, k*pass
	return p, note
}
