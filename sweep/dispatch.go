package sweep

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kneecap/kneecap/record"
)

// The arrival-rate (open-loop) level (DESIGN §3.9): one dispatcher goroutine per level draws
// the arrival gaps, waits to each absolute scheduled time t_k = start + Σ gaps (one reused
// timer: lateness never accumulates), takes a free slot of the c = max_concurrency slots (a
// buffered channel of slot ids; FIFO when full, the arrivals behind keeping their scheduled
// times: no coordinated omission) and starts the request on its own goroutine, which records
// into its slot's mailbox as a closed-loop worker does into its own. The level's lifecycle
// (runner.go) is the closed loop's: collect, horizon, window, drain.

// openSilentArrivals is how many of a rate level's first arrivals must all time out, none of
// the level's requests answered, for the server to be declared silent (dead.go); fewer when
// the cap is lower.
const openSilentArrivals = 4

// scheduleState is a rate level's part of level: the offered rate, the schedule's gaps, the
// slots, and the dispatcher's account of the arrivals that had to wait for one. The
// dispatcher alone writes the account; the controller reads it after every goroutine of the
// level has returned.
type scheduleState struct {
	rps float64
	// gaps returns a new generator of the gaps between the level's arrivals, the same
	// sequence each time (schedule): the arrival process's at rps, or a trace replay's.
	gaps func() func() time.Duration
	// realize says that the window must realise the offered rate (realizedGate): not on a
	// trace replay, whose window is a whole number of passes of the recorded traffic.
	realize bool
	slots   chan int
	// until is when a shard's level stops scheduling arrivals: its scheduled W1 (the zero
	// time: when issuing stops). The shards then send every arrival due before it, and
	// none after, whatever moment each stops issuing at: arrivals 0 … K−1 of the one
	// schedule, t_k < W1, are the level's.
	until time.Time

	arrivals int           // scheduled so far (sent or cancelled)
	waited   int           // arrivals that found every slot taken
	longest  time.Duration // the longest wait of those, from the scheduled time to a slot
	// notDue counts the arrivals whose goroutine, started issueLead early, found that issuing
	// had stopped before their time: not arrivals of the level (issue writes it).
	notDue atomic.Int64

	// count replays the schedule for the controller's window (realized.go); nil until the
	// window starts, and for a trace level.
	count *arrivalCount
}

// initSchedule makes l an arrival-rate level offering rps requests/s, arrival's gaps apart, with
// the slots first … first+n−1 of c (a shard's part of the cap: newLevel).
func (l *level) initSchedule(arrival Arrival, rps float64) {
	index := l.index
	gaps := func() func() time.Duration { return arrival.Gaps(rps, index) }
	l.sched = &scheduleState{rps: rps, gaps: gaps, realize: true, slots: make(chan int, l.n)}
	for s := l.first; s < l.first+l.n; s++ {
		l.sched.slots <- s
	}
	l.warmNeed = 1
	l.silentN = int64(min(l.n, openSilentArrivals))
	l.run.OfferedRPS = rps
	// One mailbox more than slots: the dispatcher's, for the arrivals cancelled unsent.
	l.boxes = append(l.boxes, &mailbox{})
}

// ownOrdinal returns which of this process's arrivals arrival seq is (from 0): seq itself,
// or on a shard of n, seq ÷ n (it sends seq, seq+n, …).
func (l *level) ownOrdinal(seq int) int {
	if sh := l.run.Shard; sh != nil && sh.Count > 0 {
		return seq / sh.Count
	}
	return seq
}

// dispatch is a rate level's dispatcher: it schedules arrival after arrival until issuing
// stops (or, on a Schedule, the arrivals due before its until), then settles the arrivals due
// by that moment (flush).
func (l *level) dispatch() {
	defer l.wg.Done()
	sch := l.newSchedule()
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	var freed time.Time // when the dispatcher last got a slot after a wait
	for {
		seq, at := sch.next()
		if l.sched.past(at) {
			return
		}
		if !l.sleepUntil(t, at.Add(-issueLead)) {
			l.flush(seq, sch)
			return
		}
		slot, waited, ok := l.takeSlot(at.Before(freed))
		if !ok {
			l.flush(seq, sch)
			return
		}
		if waited {
			freed = time.Now()
		}
		l.send(slot, seq, at, waited)
	}
}

// send starts arrival seq, scheduled at at, in slot, and accounts for its wait (waited: it
// found every slot taken, or queued behind one that did).
func (l *level) send(slot, seq int, at time.Time, waited bool) {
	rs := l.sched
	rs.arrivals++
	var wait time.Duration
	if waited {
		wait = max(time.Since(at), 0)
		rs.waited++
		rs.longest = max(rs.longest, wait)
	}
	l.wg.Add(1)
	go l.issue(slot, seq, at, wait)
}

// issueLead is how long before an arrival's time the dispatcher starts its request's goroutine,
// which prepares the request, then sleeps in the kernel until the time (kernelSleep) and sends
// it: the goroutine's start, a thread's wake-up and the workload's request are then not in its
// lateness behind the schedule (at 0.56 requests/s they had made it 0.4 ms at the median,
// 1.3 ms at p95, 1.2% of a 100 ms TTFT from the scheduled arrival). 0 where kernelSleep is
// the runtime's sleep.
const issueLead = kernelSlack

// sleepUntil waits until at on t, the runtime's timer (it may fire up to a millisecond late:
// the arrival's goroutine, started issueLead early, keeps its time), and reports false when
// issuing stopped (or the level's requests were cancelled) first, or had already when at has
// passed.
func (l *level) sleepUntil(t *time.Timer, at time.Time) bool {
	if d := time.Until(at); d > 0 {
		t.Reset(d)
		select {
		case <-t.C:
		case <-l.stop:
			t.Stop()
			return false
		case <-l.reqCtx.Done():
			t.Stop()
			return false
		}
	}
	select {
	case <-l.stop:
		return false
	case <-l.reqCtx.Done():
		return false
	default:
		return true
	}
}

// takeSlot takes a free slot, waiting for one when every slot is taken, and reports whether
// the arrival waited (it did, too, when behind reports that it was scheduled before the
// dispatcher got its last slot after a wait: it queued behind that arrival). ok is false when
// issuing stopped during the wait.
func (l *level) takeSlot(behind bool) (slot int, waited, ok bool) {
	select {
	case s := <-l.sched.slots:
		return s, behind, true
	default:
	}
	select {
	case s := <-l.sched.slots:
		return s, true, true
	case <-l.stop:
	case <-l.reqCtx.Done():
	}
	return -1, true, false
}

// past reports whether an arrival due at at is past the schedule's until: not the level's.
func (rs *scheduleState) past(at time.Time) bool {
	return !rs.until.IsZero() && !at.Before(rs.until)
}

// flush settles, once issuing has stopped, arrival seq (due at sch.at) and those after it
// (this shard's only, on a Schedule) that were due by now: each is sent when a slot is free
// (the dispatcher was only late: it belongs to the drain) and the level's requests are not
// cancelled, else recorded cancelled (Sent = now, E2E 0) — a due arrival is never dropped.
// Later arrivals were not due. The cancelled records are at most rate × the time the
// dispatcher waited for a slot, no more than the level would have sent uncapped over that
// time, and the rate is at most MaxRate. Each keeps the model its request would have asked
// (workload.models).
func (l *level) flush(seq int, sch *schedule) {
	rs := l.sched
	now := time.Now()
	select {
	case <-l.stop:
		now = l.stopped // the moment issuing stopped: an arrival after it was not due
	default:
	}
	stamp := l.clk.unix(now)
	why := unsentNoSlot
	if l.reqCtx.Err() != nil {
		why = "the level's requests were cancelled before it was sent"
	}
	var recs []record.Record
	for at := sch.at; !at.After(now) && !rs.past(at); seq, at = sch.next() {
		if l.reqCtx.Err() == nil {
			select {
			case s := <-rs.slots:
				l.send(s, seq, at, false)
				continue
			default:
			}
		}
		rs.arrivals++
		if len(rs.slots) == 0 { // the cap held it back, not the dispatcher's lateness
			rs.waited++
			rs.longest = max(rs.longest, now.Sub(at))
		}
		// The model its request would have asked (issue's draw, (level, 0, seq)): a level's
		// by_model counts its unsent arrivals too, so that the models add up to the level.
		model := l.workload.Next(l.index, 0, seq).Model
		recs = append(recs, record.Record{Level: l.index, Concurrency: l.c, Worker: -1, Seq: seq, Model: model,
			Scheduled: l.clk.unix(at), Sent: stamp, Status: record.StatusCancelled, ErrorClass: record.ErrCancelled,
			Error: why})
	}
	if len(recs) == 0 {
		return
	}
	box := l.boxes[l.n]
	box.mu.Lock()
	box.recs = append(box.recs, recs...)
	box.mu.Unlock()
}

// issue sends arrival seq, due at at, in slot — which it waited wait for (Record.SlotWait) —
// records it in the slot's mailbox and frees the slot. Started up to issueLead early, it makes
// the request, then sleeps in the kernel until at; an arrival whose time came after issuing
// stopped is not one of the level's (notDue) and sends nothing. Its scheduled time is on the
// level's monotonic-derived clock (l.clk), the client's Sent on the wall clock: a wall-clock
// step during the level shifts Sent − Scheduled by the step (DESIGN §3.9 says so; Scheduled
// stays start + Σ gaps exactly).
func (l *level) issue(slot, seq int, at time.Time, wait time.Duration) {
	defer l.wg.Done()
	box := l.boxes[slot-l.first]
	// The request is the arrival's, whatever slot it runs in: (level, 0, seq).
	req := l.workload.Next(l.index, 0, seq)
	if d := time.Until(at); d > 0 {
		kernelSleep(d) // at most issueLead and the dispatcher timer's lateness
	}
	select {
	case <-l.stop:
		if l.stopped.Before(at) {
			l.sched.notDue.Add(1)
			l.sched.slots <- slot
			return
		}
	default:
	}
	sched := l.clk.unix(at)
	rec := record.Record{Level: l.index, Concurrency: l.c, Worker: slot, Seq: seq, Sent: l.clk.now(), Scheduled: sched, SlotWait: wait}
	l.do(box, &req, &rec)
	box.mu.Lock()
	box.recs = append(box.recs, rec)
	box.since = 0
	box.mu.Unlock()
	l.health.rateEnded(&rec)
	l.health.ended(&rec, l.ownOrdinal(seq) < int(l.silentN))
	if l.firstDone.Add(1) == l.warmNeed {
		close(l.warm)
	}
	l.sched.slots <- slot
}

// notes are the rate level's notes: arrivals that had to wait for a slot when every slot of
// limit (capName) was taken, and arrivals due when issuing stopped that were never sent
// (records, the level's).
func (rs *scheduleState) notes(limit string, records []record.Record) []string {
	return rateNotes(limit, rs.waited, rs.arrivals-int(rs.notDue.Load()), rs.longest, records)
}

// rateNotes words a rate level's notes on its cap (limit) and its unsent arrivals: waited
// of arrivals waited client-side for a slot, the longest for longest; records' Worker −1
// were due when issuing stopped and never sent.
func rateNotes(limit string, waited, arrivals int, longest time.Duration, records []record.Record) []string {
	var out []string
	if waited > 0 {
		out = append(out, fmt.Sprintf("%s reached: %d of %d arrivals waited client-side (longest %s)",
			limit, waited, arrivals, longest.Round(time.Microsecond)))
	}
	unsent := 0
	for i := range records {
		if records[i].Worker < 0 {
			unsent++
		}
	}
	if unsent > 0 {
		out = append(out, fmt.Sprintf("%d arrivals due when issuing stopped were never sent: recorded cancelled", unsent))
	}
	return out
}

// unsentNoSlot is the Error of an arrival never sent because issuing stopped while every
// slot was taken (it waited for one until then).
const unsentNoSlot = "issuing stopped before a slot was free"

// capName names the cap on l's requests in flight for its notes: "max_concurrency 64", or on
// a shard "this shard's 32 slots (max_concurrency 64 ÷ 2 shards)".
func (l *level) capName() string {
	if sh := l.run.Shard; sh != nil {
		return fmt.Sprintf("this shard's %d slots (max_concurrency %d ÷ %d shards)", l.n, l.c, sh.Count)
	}
	return fmt.Sprintf("max_concurrency %d", l.c)
}
