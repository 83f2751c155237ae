package sweep

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/workload"
)

// The level runner (DESIGN §3): the one level lifecycle of every executor (executor.go) — the
// closed loop's workers, an open loop's or a trace replay's dispatcher (dispatch.go) — and the
// controller that collects their records, watches the window and ends the phases when the
// level's clock (clock.go) says so.

// liveEvery is the period of Observer.Live calls.
const liveEvery = 500 * time.Millisecond

// levelEnd says how a level ended.
type levelEnd int

const (
	endNormal      levelEnd = iota // measured to a steady verdict or max_duration
	endInterrupt                   // interrupt: stop issuing and drain
	endCancel                      // ctx cancelled: in-flight requests cancelled
	endBudget                      // the sweep's time budget ran out
	endUnreachable                 // no worker could connect for unreachableAfter (dead.go)
	endSilent                      // every worker's first request timed out unanswered (dead.go)
	endOverlong                    // every worker's first request streamed past its max_tokens (dead.go)
)

// dead reports an end because the server does not answer: in-flight requests are cancelled
// at once and the sweep stops.
func (e levelEnd) dead() bool { return e == endUnreachable || e == endSilent || e == endOverlong }

// unixClock returns Unix nanoseconds derived from the monotonic clock from base on, so that
// intervals between readings are immune to wall-clock steps.
type unixClock struct{ base time.Time }

func (c unixClock) now() int64 { return c.unix(time.Now()) }

// unix returns t, a reading taken after base, in the clock's Unix nanoseconds.
func (c unixClock) unix(t time.Time) int64 { return c.base.UnixNano() + int64(t.Sub(c.base)) }

// mailbox is a worker's (or a rate level's slot's) local record buffer. The worker appends
// under mu (uncontended except when the controller collects, a few times a second); since is
// the issue time of the worker's in-flight request, 0 when idle; downSince is the end (Unix
// ns) of the first of a closed-loop worker's latest run of connect errors, 0 when its latest
// request connected (a rate level keeps one run for the level: health.rateDown).
type mailbox struct {
	mu        sync.Mutex
	recs      []record.Record
	since     int64
	downSince int64
}

// level is one level being run: c closed-loop workers (or, for a shard, workers first …
// first+n-1 of them), or an open loop's c slots, and the controller's view of them.
type level struct {
	index, c int
	first, n int           // the workers this process runs
	stagger  time.Duration // first requests are spread over [0, stagger)
	// scheduledAt is the scheduled start of a shard's level on this machine's clock (zero
	// when not on a Schedule; set by runLevel): the closed loop's spread counts from it, so a
	// shard that starts a little late still has every worker in the same place as the
	// others; an open loop's arrivals are due from it; its scheduled clock's phases end
	// after it.
	scheduledAt time.Time
	proto       Protocol
	think       time.Duration
	workload    workload.Workload
	client      record.Client
	obs         Observer
	scraper     WindowSummarizer
	gpu         GPUSummarizer
	clk         unixClock
	clock       levelClock

	boxes     []*mailbox
	inflight  atomic.Int64
	firstDone atomic.Int64
	// warmNeed is the firstDone count that closes warm: every worker of this process (a
	// rate level: one request); silentN is how many first requests (every worker's, a rate
	// level's first arrivals) must time out unanswered for the server to be silent (dead.go).
	warmNeed, silentN int64
	warm              chan struct{} // closed when firstDone reaches warmNeed
	// begun is the level's start, WarmupStart (an open loop's schedule counts from it).
	begun time.Time
	// sched is an open-loop level's schedule state (dispatch.go); nil on a closed-loop level.
	sched     *scheduleState
	cuts      sessionCuts   // conversations the context limit ended (sessionrun.go)
	stop      chan struct{} // closed: stop issuing
	stopped   time.Time     // when stop was closed (read once it is)
	done      chan struct{} // closed when every worker has returned
	reqCtx    context.Context
	cancelReq context.CancelFunc
	wg        sync.WaitGroup

	// Controller-only state.
	slice    int64 // the steady-state test's slice, duration ÷ MinSlices (ns)
	kmax     int   // the longest window in slices
	tick     *time.Ticker
	lastLive time.Time
	start    int64 // level start (Unix ns)
	all      []record.Record
	win      *window
	horizon  int64 // every record with a chunk before horizon has been collected
	run      record.LevelRun
	notes    []string
	// health is what the records say of the server; unreachableAfter is Plan's; deadWhy
	// says why the level ended when the server did not answer (dead.go).
	health           health
	unreachableAfter time.Duration
	deadWhy          string
	// budget is the sweep's answer budget on its first level (nil on the others, or none):
	// every request carries it until one answers; budgetSpent says it ended the level.
	budget      *record.AnswerBudget
	budgetSpent bool
	// cancelledAt says when the drain cancels what is still in flight, for the level's note.
	cancelledAt string
}

// levelSignals are the events that end a level early.
type levelSignals struct {
	ctx, interrupt, budget <-chan struct{}
}

// runLevel runs level index at x, its requests issued by ex, and returns its LevelRun, every
// record of the level (phases assigned), how it ended and, when the server did not answer
// (end.dead()), the level's account of why.
func runLevel(ctx context.Context, sig levelSignals, p *Plan, client record.Client, ex executor, index int, x float64,
	budget *record.AnswerBudget) (record.LevelRun, []record.Record, levelEnd, string) {
	l := ex.newLevel(ctx, p, client, index, x)
	l.budget = budget
	defer l.cancelReq()
	defer l.tick.Stop()
	if s := p.Schedule; s != nil {
		// The plan's protocol places the level (a trace level's own protocol measures it). A
		// wall-clock time without a monotonic reading: every instant derived from it is
		// exact in Unix ns (l.clk.unix), an arrival's Scheduled start + Σ gaps.
		l.scheduledAt = s.LevelStart(p.Protocol, index).Round(0)
		if l.sched != nil {
			l.sched.until = l.scheduledAt.Add(l.proto.Warmup + scheduledWindow(l.proto)) // W1
		}
	}
	l.begin(ex)
	l.clock = newLevelClock(l.proto, l.scheduledAt, time.Now())

	end := l.warmup(sig)
	var cpu0 selfcheck.ClientSample
	if end == endNormal {
		cpu0 = selfcheck.SampleClient()
		// The window exists before this collect, so records that ended after W0 (while the
		// client was sampled) count in the controller's slices and completions too.
		l.win = newWindow(l.run.W0, l.slice, record.MinSlices, l.kmax)
		l.win.rate = l.run.Mode().IsRate()
		l.collect()
		end = l.measure(sig)
	}

	// Drain: stop issuing; in-flight requests finish until the clock's drain end, then are
	// cancelled: at once when the server does not answer, within InterruptDrainTimeout once
	// an interrupt has come.
	l.stopped = time.Now()
	close(l.stop)
	var cs *record.ClientStats
	if l.run.W1 > l.run.W0 {
		cs = selfcheck.SampleClient().Since(cpu0)
	}
	now := time.Now()
	deadline := l.clock.drainEnd(now, end)
	l.cancelledAt = fmt.Sprintf("at drain_timeout (%s)", l.proto.DrainTimeout)
	if end.dead() {
		l.note("%s", l.deadWhy)
		deadline, l.cancelledAt = now, "when the level ended"
		if l.budgetSpent {
			deadline = now.Add(budgetDrain)
		}
	}
	timedOut := l.drain(deadline, sig.interrupt)
	records := l.finish(end, timedOut, cs)
	if end == endNormal && ctx.Err() != nil {
		// Hard stop during the drain: the window is complete, but the sweep ends here.
		end = endCancel
	}
	return l.run, records, end, l.deadWhy
}

// newLevel prepares level index of p with concurrency c: this process's workers (a shard's
// part on a Schedule), their mailboxes and the controller's ticker.
func newLevel(ctx context.Context, p *Plan, client record.Client, index, c int) *level {
	proto := p.Protocol
	l := &level{
		index: index, c: c, first: 0, n: c, proto: proto, think: p.ThinkTime, workload: p.Workload,
		client: client, obs: p.Observer, scraper: p.Scraper, gpu: p.GPU,
		// Anchored per level: phase boundaries stay within microseconds of the client's
		// wall-clock send times even if the wall clock is slewed during a long sweep.
		clk:     unixClock{base: time.Now()},
		warm:    make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		stagger: proto.Warmup,
		slice:   int64(proto.Duration) / record.MinSlices,
		kmax:    maxSlices(proto),
		run:     record.LevelRun{Index: index, Concurrency: c},

		unreachableAfter: p.UnreachableAfter,
	}
	if l.unreachableAfter <= 0 {
		l.unreachableAfter = DefaultUnreachableAfter
	}
	if s := p.Schedule; s != nil {
		l.first, l.n = Workers(c, s.Shard, s.Shards)
		// A shard's warmup cannot be extended, so the first requests are spread over its
		// first half only: every worker completes one by W0 when E2E ≤ warmup ÷ 2.
		l.stagger = proto.Warmup / 2
		l.run.Shard = &record.ShardPart{Index: s.Shard, Count: s.Shards, FirstWorker: l.first, Workers: l.n}
		if l.n == 0 {
			close(l.warm) // a shard with no worker at this level (c < shards) only keeps time
			l.note("this shard runs none of the level's %d workers (%d shards)", c, s.Shards)
		}
	}
	l.reqCtx, l.cancelReq = context.WithCancel(ctx)
	l.warmNeed, l.silentN = int64(l.n), int64(l.n)
	l.boxes = make([]*mailbox, l.n)
	for i := range l.boxes {
		l.boxes[i] = &mailbox{}
	}
	tickEvery := min(time.Duration(l.slice)/4, 100*time.Millisecond)
	l.tick = time.NewTicker(max(tickEvery, 5*time.Millisecond))
	return l
}

// begin starts the level: WarmupStart, the observer's LevelStarted and ex's issuing (the
// workers, or the dispatcher of an open loop, whose schedule starts at WarmupStart).
func (l *level) begin(ex executor) {
	l.begun = time.Now()
	l.start = l.clk.unix(l.begun)
	l.run.WarmupStart = l.start
	if l.obs != nil {
		l.obs.LevelStarted(l.index, l.c)
	}
	ex.start(l)
	go func() { l.wg.Wait(); close(l.done) }()
	l.lastLive = time.Now()
}

// warmup runs the warmup until the clock ends it or a signal ends the level, and sets W0 (the
// moment of the signal if one came) and W1 = W0.
func (l *level) warmup(sig levelSignals) levelEnd {
	var w0 int64
	end := l.await(sig, record.PhaseWarmup, l.warm, func(ev event) (over bool) {
		w0, over = l.clock.warmupEnd(l, ev)
		return over
	})
	if end == endNormal {
		// The warmup may end at the very event that shows nothing answered it.
		if dead, why := l.dead(); dead != endNormal {
			end, l.deadWhy = dead, why
		}
	}
	if end != endNormal {
		w0 = l.clk.now()
	}
	l.run.W0, l.run.W1 = w0, w0
	return end
}

// measure runs the measurement until the clock ends the window or a signal ends the level
// (W1 is then that moment, at most the longest window's end), sets W1 and, when the window
// ended normally, sends its live numbers. A window that
// ends while every worker is failing to connect is held open, its W1 kept, with the workers
// still trying, until one connects again or the server is declared unreachable (dead.go):
// the stop rules are not handed a level whose server just died (not on a schedule, whose
// level ends at fixed times).
func (l *level) measure(sig levelSignals) levelEnd {
	var w1, held int64
	end := l.await(sig, record.PhaseMeasure, nil, func(ev event) (over bool) {
		if held != 0 {
			w1, over = held, true
		} else {
			w1, over = l.clock.windowEnd(l, ev)
		}
		if over && l.run.Shard == nil && l.health.downSince != 0 {
			held = w1
			return false
		}
		return over
	})
	if end != endNormal {
		w1 = min(l.clk.now(), l.longestEnd())
		if held != 0 {
			w1 = held
		}
	}
	l.run.W1 = w1
	if end == endNormal {
		// The window's last live numbers: an observer sees at least one sample of every
		// window however few ticks the controller got (a starved machine).
		l.lastLive = time.Now()
		l.live(record.PhaseMeasure)
	}
	return end
}

// longestEnd is the end of the longest window from W0: max_duration in whole slices.
func (l *level) longestEnd() int64 { return l.run.W0 + l.slice*int64(l.kmax) }

// await runs the controller through one phase until ask reports it over (endNormal) or a
// signal ends the level. On every tick it collects the workers' records, asks, and sends the
// live statistics; it also asks when the clock's wake time comes and, unless warm is nil,
// when every worker has completed a request.
func (l *level) await(sig levelSignals, phase record.Phase, warm <-chan struct{}, ask func(event) bool) levelEnd {
	var a alarm
	defer a.stop()
	for {
		a.set(l.clock.wake(phase, time.Now()))
		var ev event
		tick := false
		select {
		case <-a.c:
			a.c, ev.timer = nil, true
		case <-warm:
			warm = nil
		case <-l.tick.C:
			l.collect()
			if end, why := l.dead(); end != endNormal {
				l.deadWhy = why
				return end
			}
			tick = true
		case <-sig.interrupt:
			return endInterrupt
		case <-sig.ctx:
			return endCancel
		case <-sig.budget:
			return endBudget
		}
		ev.now = time.Now()
		if ask(ev) {
			return endNormal
		}
		if tick {
			l.maybeLive(phase)
		}
	}
}

// drain waits until every worker has returned, collecting and reporting live statistics
// meanwhile; at deadline it cancels the requests still in flight and reports that it did.
// Once interrupt is closed (before or during the drain) the deadline is at most
// InterruptDrainTimeout away.
func (l *level) drain(deadline time.Time, interrupt <-chan struct{}) (timedOut bool) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	tc := t.C
	for {
		select {
		case <-l.done:
			return timedOut
		case <-tc:
			timedOut, tc = true, nil
			l.cancelReq()
		case <-interrupt:
			interrupt = nil
			if cut := time.Now().Add(InterruptDrainTimeout); tc != nil && cut.Before(deadline) {
				deadline = cut
				t.Reset(time.Until(cut))
				l.cancelledAt = fmt.Sprintf("%s after the interrupt", InterruptDrainTimeout)
			}
		case <-l.tick.C:
			l.collect()
			l.maybeLive(record.PhaseDrain)
		}
	}
}

// finish completes the LevelRun after the drain — DrainEnd, phases, cancellations, the
// verdict of the final window, the client self-check cs (nil without a window) and the
// server metrics — and returns every record of the level.
func (l *level) finish(end levelEnd, timedOut bool, cs *record.ClientStats) []record.Record {
	run := &l.run
	run.DrainEnd = l.clk.now()
	l.collect()
	records := l.all
	record.SetPhases(records, run.W0, run.W1)
	for i := range records {
		if records[i].Status == record.StatusCancelled && !records[i].UserCancelled() {
			run.Cancelled++
		}
	}
	if timedOut && run.Cancelled > 0 {
		l.note("%d requests still in flight %s were cancelled", run.Cancelled, l.cancelledAt)
	}
	if l.sched != nil {
		l.notes = append(l.notes, l.sched.notes(l.capName(), records)...)
	}
	if n := l.cuts.note(); n != "" {
		l.notes = append(l.notes, n)
	}
	verdict := finishWindow(run, records, l.proto, l.slice, end)
	if run.Shard != nil && !run.Interrupted {
		// A shard holds a part of the level: steadiness and min_requests are judged on the
		// union of the shards' records by MergeLevel, so this part's verdict is not given. The
		// server's death is the part's own: its reason stays, for the merge (endedApart).
		run.Steady, run.Imprecise, verdict = false, false, nil
		if !end.dead() {
			run.NotSteadyReason = "one shard's part of the level: kneecap merge judges the whole"
		}
	}
	l.notes = append(l.notes, verdict...)
	if cs != nil {
		selfcheck.JudgeClient(cs, records, run.W0, run.W1, run.Mode().IsRate(), l.proto.ClientTolerance)
		run.Client = cs
		if cs.Bound {
			l.notes = append(l.notes, selfcheck.ClientBoundNote(cs))
		}
		if cs.Note != "" {
			l.notes = append(l.notes, cs.Note)
		}
	}
	if l.scraper != nil && run.W1 > run.W0 {
		run.Server = l.scraper.Summarize(run.W0, run.W1)
	}
	if l.gpu != nil && run.W1 > run.W0 {
		wait, cancel := context.WithCancel(context.Background())
		if end != endNormal {
			cancel() // a level ended early (an interrupt, the budget) does not wait for a reading
		}
		run.GPU = l.gpu.SummarizeGPU(wait, run.W0, run.W1)
		cancel()
		l.notes = append(l.notes, gpuNote(run.GPU)...)
	}
	run.Notes = l.notes
	return records
}

// note adds a note to the level.
func (l *level) note(format string, args ...any) {
	l.notes = append(l.notes, fmt.Sprintf(format, args...))
}

// do sends req from box (a worker's, or the slot's of an arrival), rec's Sent its issue time,
// and records its stream in rec, and the model it asked (workload.models): box's since is the
// issue time meanwhile, and the request counts in flight.
func (l *level) do(box *mailbox, req *record.Request, rec *record.Record) {
	rec.Model = req.Model
	box.mu.Lock()
	box.since = rec.Sent
	box.mu.Unlock()
	l.inflight.Add(1)
	req.Budget = l.budget
	l.client.Do(l.reqCtx, req, rec)
	if l.budget != nil && record.Answers(rec) {
		// An embeddings answer has no content chunk; a complete error answer (a 429, a 500)
		// is the error-rate rule's to judge, not the budget's silence.
		l.budget.Answer()
	}
	l.inflight.Add(-1)
}

// collect moves the workers' records to the controller and updates the horizon — the
// earliest issue time of a request in flight, or the collection start when none is: no
// request in flight can have a chunk before it, so the tokens before it are all known — and
// the level's health.downSince: on a closed-loop level the latest start of a worker's run of
// connect errors when every worker is in one, on a rate level the level's run (rateDown).
func (l *level) collect() {
	h := l.clk.now()
	allDown, down := l.n > 0, int64(0)
	for _, box := range l.boxes {
		box.mu.Lock()
		recs := box.recs
		box.recs = nil
		if box.since != 0 && box.since < h {
			h = box.since
		}
		allDown = allDown && box.downSince != 0
		down = max(down, box.downSince)
		box.mu.Unlock()
		for i := range recs {
			if l.win != nil {
				l.win.add(&recs[i])
			}
			l.health.add(&recs[i])
		}
		l.all = append(l.all, recs...)
	}
	l.horizon = h
	switch {
	case l.run.Mode().IsRate():
		l.health.downSince = l.health.rateDown.Load()
	case allDown:
		l.health.downSince = down
	default:
		l.health.downSince = 0
	}
}

// maybeLive sends the live numbers when liveEvery has passed since the last time.
func (l *level) maybeLive(phase record.Phase) {
	if time.Since(l.lastLive) >= liveEvery {
		l.lastLive = time.Now()
		l.live(phase)
	}
}

// live sends the level's live numbers to the observer.
func (l *level) live(phase record.Phase) {
	if l.obs == nil {
		return
	}
	now := l.clk.now()
	s := LiveStats{
		Index:       l.index,
		Concurrency: l.c,
		OfferedRPS:  l.run.OfferedRPS,
		Phase:       phase,
		Elapsed:     time.Duration(now - l.start),
		InFlight:    int(l.inflight.Load()),
	}
	if l.win != nil {
		s.Completed = l.win.completed
		s.OutputTPS = l.win.liveTPS(now)
		s.TTFTP50 = l.win.liveTTFT()
	}
	l.obs.Live(s)
}
