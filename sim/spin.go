package sim

import "time"

// spinChunk is the number of arithmetic rounds between two looks at the clock and the
// submission channel: about a microsecond of work, so a step ends, and a submission is taken,
// within a few microseconds.
const spinChunk = 512

// spinner burns the steps of compute spin on the engine's locked OS thread and keeps what the
// OS gave that thread while it did.
type spinner struct {
	state  uint64       // the arithmetic's running value, kept so that the work is not elided
	clock  *threadClock // the thread's scheduling times; nil where the OS does not report them
	wall   time.Duration
	cpu    time.Duration
	queued time.Duration
}

// open starts measuring the calling thread; call it on the locked engine thread.
func (sp *spinner) open() { sp.clock = openThreadClock() }

func (sp *spinner) close() { sp.clock.close() }

// spinUntil burns CPU until t while accepting submissions, as a CPU engine computes a step; it
// reports false when the engine is stopped. Its signature is sleepUntil's (the timer unused).
func (e *engine) spinUntil(_ *time.Timer, t time.Time) bool {
	sp := &e.spin
	start := time.Now()
	cpu0, queued0, measured := sp.clock.read()
	x := sp.state
	running := true
	for now := start; running && now.Before(t); now = time.Now() {
		// A 64-bit LCG (Knuth's MMIX constants): a dependent chain of multiply-adds.
		for range spinChunk {
			x = x*6364136223846793005 + 1442695040888963407
		}
		select {
		case r := <-e.submit:
			e.take(r)
			e.publish()
		case <-e.stop:
			running = false
		default:
		}
	}
	if running {
		select {
		case <-e.stop:
			running = false
		default:
		}
	}
	sp.state = x
	sp.wall += time.Since(start)
	if cpu1, queued1, ok := sp.clock.read(); ok && measured {
		sp.cpu += cpu1 - cpu0
		sp.queued += queued1 - queued0
	}
	return running
}
