package sweep

import (
	"math"
	"time"

	"github.com/kneecap/kneecap/record"
)

// bins splits the window [w0, w1) (Unix nanoseconds) into n equal slices; slice i is
// [w0 + (w1−w0)·i/n, w0 + (w1−w0)·(i+1)/n) with integer division.
type bins struct {
	w0, w1 int64
	n      int64
}

// bound returns the start of slice i (i = n gives w1).
func (b bins) bound(i int64) int64 { return b.w0 + (b.w1-b.w0)*i/b.n }

// index returns the slice holding t, which must be in [w0, w1).
func (b bins) index(t int64) int64 {
	i := (t - b.w0) * b.n / (b.w1 - b.w0)
	// Integer division of the bounds can put t one slice off; correct it.
	for i > 0 && t < b.bound(i) {
		i--
	}
	for i < b.n-1 && t >= b.bound(i+1) {
		i++
	}
	return i
}

// window accumulates the measurement window incrementally as records are collected, in
// slices of fixed length from W0 (the steady-state test's slices): the candidate windows
// [w0, w0+k·slice) for k from kmin to kmax.
type window struct {
	w0, slice  int64
	kmin, kmax int
	b          bins // [w0, w0+kmax·slice) in kmax slices
	tok        []float64
	okStats    []record.CompletionStats // the successful completions ending in each slice
	completed  int                      // successful completions at or after w0
	yield      float64                  // their tokens (record.Record.Yield)
	ttft       []float64                // the user's TTFT (ns) of successful completions at or after w0 (liveTTFT)
	nextK      int                      // next candidate window length in slices
	rate       bool                     // an arrival-rate level's window: SteadyRate decides it
	// accept, when set, is a further condition on a candidate window of k slices (a rate
	// level's realised rate, realized.go).
	accept func(k int) bool
}

func newWindow(w0, slice int64, kmin, kmax int) *window {
	return &window{
		w0: w0, slice: slice, kmin: kmin, kmax: kmax,
		b:       bins{w0: w0, w1: w0 + slice*int64(kmax), n: int64(kmax)},
		tok:     make([]float64, kmax),
		okStats: make([]record.CompletionStats, kmax),
		nextK:   kmin,
	}
}

func (w *window) add(r *record.Record) {
	record.TokensInWindow(r, w.b.w0, w.b.w1, w.tok)
	if !record.CompletedInWindow(r, w.w0, math.MaxInt64) {
		return
	}
	w.completed++
	w.yield += float64(r.Yield())
	w.ttft = append(w.ttft, float64(r.TTFT+r.Lag()))
	if d := r.Done(); d < w.b.w1 {
		i := w.b.index(d)
		w.okStats[i].Add(r.Yield(), r.E2E)
	}
}

// sliceTPS returns the tokens/s of the first k slices, as SliceTPS computes them over
// [w0, w0+k·slice).
func (w *window) sliceTPS(k int) []float64 {
	out := append([]float64(nil), w.tok[:k]...)
	record.ToTPS(out, w.w0, w.w0+int64(k)*w.slice)
	return out
}

// decide evaluates every candidate window [w0, w0+k·slice) that lies entirely below horizon
// (so every token in it is known) and has not been evaluated yet, shortest first. It returns
// the first k that has min_requests successful completions, meets accept and passes the
// steady-state test at the CI target its completions can resolve (CITarget), or 0.
func (w *window) decide(horizon int64, minRequests int, ciTarget float64) int {
	for ; w.nextK <= w.kmax && w.w0+int64(w.nextK)*w.slice <= horizon; w.nextK++ {
		k := w.nextK
		var done record.CompletionStats
		for i := range w.okStats[:k] {
			done.Merge(w.okStats[i])
		}
		if done.N < minRequests || w.accept != nil && !w.accept(k) {
			continue
		}
		target := ciTarget
		if !w.rate {
			target = record.CITarget(ciTarget, k, done)
		}
		if record.SteadyDetails(w.sliceTPS(k)).SteadyAt(ciTarget, target, w.rate) {
			w.nextK++
			return k
		}
	}
	return 0
}

// liveTPS returns the tokens of the requests completed in the window so far ÷ the time since
// it opened (now, Unix ns), at least the status line's redraw interval (liveEvery, so that two
// early completions cannot read as a burst): a request's tokens count when it completes, so
// the live rate is there while long streams are in flight, and in a steady level it is the
// rate that flows from the first completions on (the tokens streamed before the window by the
// requests completing early in it stand for those still in flight at now), however long each
// stream takes. The exact rate of the slices waits for the oldest request in flight (the
// horizon), which on a loaded rate level is held near the level's start: it would read 0
// while tokens flow. 0 (not shown) before the second completion: one request's tokens over
// the time since the window opened say nothing of the rate.
func (w *window) liveTPS(now int64) float64 {
	if w.completed < 2 {
		return 0
	}
	return w.yield / record.WindowSeconds(0, max(now-w.w0, int64(liveEvery)))
}

// liveTTFT returns the median TTFT of the requests completed in the window so far as a user
// waited it: from the scheduled arrival on a rate level (TTFT + Record.Lag), as the rate
// table's TTFT is (analysis.Level.UserTTFT), from the send on a closed loop; 0 before the
// first completion.
func (w *window) liveTTFT() time.Duration {
	return record.DurationPercentile(w.ttft, 50)
}
