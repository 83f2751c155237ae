package sim

import (
	"slices"
	"sync"
	"time"
)

// slotQueue is fixed mode's slot limit: at most slots requests hold a slot at once; the
// others wait first come first served, and a freed slot passes straight to the head of the
// queue.
type slotQueue struct {
	mu      sync.Mutex
	slots   int
	held    int
	waiting []*slotTicket // FCFS; head first
	metered bool          // busy follows held (the server has GPUs)
	busy    busyMeter     // held over time, for the GPUs' power
}

// slotTicket is one request's claim on a slot.
type slotTicket struct {
	granted chan struct{} // closed when the request holds a slot
	at      time.Time     // when a waiting request got its slot (zero: at once); set before granted closes
	holds   bool          // the slot is the request's (under mu)
}

// newSlotQueue returns a queue of slots slots; metered meters the slots held over time from
// origin, the server's start (for the GPUs' power).
func newSlotQueue(slots int, metered bool, origin time.Time) *slotQueue {
	return &slotQueue{slots: slots, metered: metered, busy: newBusyMeter(origin, slots)}
}

// meter records a change of held in the busy meter (under mu).
func (q *slotQueue) meter() {
	if q.metered {
		q.busy.set(q.held, time.Now())
	}
}

// busyAt reads the busy meter now.
func (q *slotQueue) busyAt() busyReading {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.busy.read(time.Now())
}

// take claims a slot: granted at once when one is free, else queued behind earlier claims.
func (q *slotQueue) take() *slotTicket {
	tk := &slotTicket{granted: make(chan struct{})}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held < q.slots {
		q.held++
		q.meter()
		tk.holds = true
		close(tk.granted)
		return tk
	}
	q.waiting = append(q.waiting, tk)
	return tk
}

// drop ends a claim: a held slot passes to the head of the queue (or becomes free); a claim
// still waiting leaves the queue.
func (q *slotQueue) drop(tk *slotTicket) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !tk.holds {
		if i := slices.Index(q.waiting, tk); i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		return
	}
	tk.holds = false
	if len(q.waiting) == 0 {
		q.held--
		q.meter()
		return
	}
	next := q.waiting[0]
	q.waiting = slices.Delete(q.waiting, 0, 1)
	next.at = time.Now()
	next.holds = true
	close(next.granted)
}

// counts returns the requests holding a slot and those waiting for one, as one snapshot.
func (q *slotQueue) counts() (held, waiting int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held, len(q.waiting)
}
