package record

import (
	"math"
	"sort"
	"time"
)

// The window arithmetic (DESIGN §1). A measurement window is [w0, w1) in Unix nanoseconds.
// Each window metric is defined here once: per record first (SentInWindow, CompletedInWindow,
// BusyInWindow, TokensInWindow), then as sums over records (WindowTotals) and the rates built
// on them, which the runner, the shard merge and the analysis all use. The controller's
// incremental window (window) and the one type-7 quantile of the tree (Percentile) live here
// too.

// SentInWindow reports whether rec was sent inside [w0, w1): the requests of the measure
// phase, whose latencies, prompt tokens and errors describe the level.
func SentInWindow(rec *Record, w0, w1 int64) bool { return rec.Sent >= w0 && rec.Sent < w1 }

// ArrivedInWindow reports whether rec arrived inside [w0, w1) (Record.Arrival: its scheduled
// time on an arrival-rate level, else its send time): the window's arrivals, the latency
// population of an arrival-rate level (DESIGN §1).
func ArrivedInWindow(rec *Record, w0, w1 int64) bool {
	a := rec.Arrival()
	return a >= w0 && a < w1
}

// CompletedInWindow reports whether rec succeeded and completed (Sent + E2E) inside
// [w0, w1): the requests that QPS, goodput and min_requests count.
func CompletedInWindow(rec *Record, w0, w1 int64) bool {
	d := rec.Done()
	return rec.OK() && d >= w0 && d < w1
}

// BusyInWindow returns the nanoseconds of rec's time in flight, [Sent, Done), that lie inside
// [w0, w1): its part of the achieved concurrency. Records of every status count.
func BusyInWindow(rec *Record, w0, w1 int64) int64 {
	lo, hi := max(rec.Sent, w0), min(rec.Done(), w1)
	return max(hi-lo, 0)
}

// TokensInWindow returns the output tokens of rec that arrived in the window [w0, w1) (Unix
// nanoseconds) and adds each to its slice of slices: len(slices) equal slices of the window,
// slice j covering [w0 + j·(w1−w0)/n, w0 + (j+1)·(w1−w0)/n). It is the one definition of the
// tokens of a window (DESIGN §1) that the steady-state test, the live statistics and analysis
// all use. A record with Chunks carries OutputTokens ÷ ChunkCount tokens at each chunk's
// arrival, Sent + offset (one per chunk when OutputTokens is 0); chunk offsets are taken to
// ascend, and any that do not are skipped, never misplaced. The chunks of its ChunksTail,
// whose offsets were not kept, arrive evenly spaced after the last kept one: the j-th of n
// (from 1) at the last kept offset + j × SumUS ÷ n (all at the last kept offset when SumUS is
// not positive). A record without Chunks has its OutputTokens tokens arrive evenly spaced
// from Sent+TTFT to Sent+E2E (all at Sent+TTFT when there is one or the two coincide); one
// without content (TTFT 0) has none. Only the records that CountsTokens count: a failed
// request's tokens are not believed, whatever arrived before it failed (a stream cut as
// overlong among them); a cancelled one's (at the drain, or by its user) did arrive and count.
// An embeddings record (Inputs > 0) has no output: its tokens are its PromptTokens, all at its
// answer's arrival (Done), when it succeeded.
// It returns 0 when slices is empty or the window is.
func TokensInWindow(rec *Record, w0, w1 int64, slices []float64) float64 {
	n := len(slices)
	if n == 0 || w1 <= w0 || !rec.CountsTokens() {
		return 0
	}
	// Offsets from w0 keep float64 exact to the nanosecond (Unix nanoseconds are not).
	sp := spread{span: float64(w1 - w0), slices: slices}
	sp.sliceNS = sp.span / float64(n)
	if rec.Inputs > 0 {
		// An embeddings answer (DESIGN §4.17): its input tokens, all at its arrival, the
		// work the server did for it, when it succeeded.
		if !rec.OK() {
			return 0
		}
		return sp.even(float64(rec.Done()-w0), 0, rec.Yield(), 1)
	}
	nOut := rec.OutputTokens
	if c := len(rec.Chunks); c > 0 {
		k := 1.0
		if nOut > 0 {
			k = float64(nOut) / float64(ChunkCount(rec))
		}
		at := func(j int) int64 { return rec.Sent + rec.Chunks[j]*int64(time.Microsecond) }
		var got float64
		for j := sort.Search(c, func(j int) bool { return at(j) >= w0 }); j < c; j++ {
			t := at(j)
			if t >= w1 {
				break
			}
			if t < w0 {
				continue
			}
			slices[sp.slot(float64(t-w0))] += k
			got += k
		}
		if tail := rec.ChunksTail; tail != nil && tail.Count > 0 {
			last := float64(at(c-1) - w0)
			d := float64(max(tail.SumUS, 0)) * float64(time.Microsecond) / float64(tail.Count)
			got += sp.even(last+d, d, tail.Count, k)
		}
		return got
	}
	if nOut <= 0 || rec.TTFT <= 0 {
		return 0
	}
	a := float64(rec.Sent + int64(rec.TTFT) - w0)
	e := float64(rec.Sent + int64(rec.E2E) - w0)
	if nOut == 1 || e <= a {
		return sp.even(a, 0, nOut, 1)
	}
	return sp.even(a, (e-a)/float64(nOut-1), nOut, 1)
}

// spread places tokens in the slices of a window span nanoseconds long.
type spread struct {
	span, sliceNS float64
	slices        []float64
}

// slot returns the slice of the offset rel (ns from the window's start, inside it).
func (sp spread) slot(rel float64) int { return min(int(rel/sp.sliceNS), len(sp.slices)-1) }

// even places n arrivals of k tokens each at t0 + j·d (j = 0 … n−1; ns from the window's
// start; all at t0 when d is 0) in their slices and returns the tokens that fell inside the
// window.
func (sp spread) even(t0, d float64, n int, k float64) float64 {
	if d <= 0 {
		if t0 < 0 || t0 >= sp.span {
			return 0
		}
		sp.slices[sp.slot(t0)] += float64(n) * k
		return float64(n) * k
	}
	// count is the number of j in [0, n) with t0 + j·d in [lo, hi).
	count := func(lo, hi float64) float64 {
		jlo := math.Max(math.Ceil((lo-t0)/d), 0)
		jhi := math.Min(math.Ceil((hi-t0)/d), float64(n))
		return math.Max(jhi-jlo, 0)
	}
	t1 := t0 + float64(n-1)*d
	// Only the slices [t0, t1] touches (widened by one each side against rounding at the
	// edges) can receive tokens: O(slices spanned) per record. Clamped as floats first so that
	// no conversion to int overflows.
	last := len(sp.slices) - 1
	first := int(math.Min(math.Max(math.Floor(t0/sp.sliceNS)-1, 0), float64(last+1)))
	end := int(math.Min(math.Max(math.Floor(t1/sp.sliceNS)+1, -1), float64(last)))
	var got float64
	for j := first; j <= end; j++ {
		lo, hi := float64(j)*sp.sliceNS, float64(j+1)*sp.sliceNS
		if j == last {
			hi = sp.span
		}
		c := count(lo, hi) * k
		sp.slices[j] += c
		got += c
	}
	return got
}

// WindowSeconds is the length of the window [w0, w1) in seconds, (w1 − w0) ÷ 10⁹: the
// denominator of every rate of the window.
func WindowSeconds(w0, w1 int64) float64 { return float64(w1-w0) / 1e9 }

// WindowTotals are the sums over a level's records that the metrics of the window [W0, W1)
// divide by its length (DESIGN §1). Add accumulates one record; every record of the level
// is added, whatever its phase, and counts as each per-record definition says (a failed
// request's tokens none, Record.CountsTokens).
type WindowTotals struct {
	// W0 and W1 bound the window (Unix nanoseconds).
	W0, W1 int64
	// SliceTokens are the output tokens that arrived in each of len(SliceTokens) equal
	// slices of the window (TokensInWindow).
	SliceTokens []float64
	// OutputTokens are the output tokens that arrived in the window: Σ TokensInWindow.
	OutputTokens float64
	// BusyNS is the time in flight inside the window summed over requests, in
	// nanoseconds: Σ BusyInWindow.
	BusyNS float64
	// Completed counts the successful requests that completed in the window
	// (CompletedInWindow).
	Completed int
}

// NewWindowTotals returns the empty totals of [w0, w1) with the output tokens also counted in
// slices equal slices (at least one).
func NewWindowTotals(w0, w1 int64, slices int) *WindowTotals {
	return &WindowTotals{W0: w0, W1: w1, SliceTokens: make([]float64, max(slices, 1))}
}

// Add counts rec in the totals.
func (t *WindowTotals) Add(rec *Record) {
	t.OutputTokens += TokensInWindow(rec, t.W0, t.W1, t.SliceTokens)
	t.BusyNS += float64(BusyInWindow(rec, t.W0, t.W1))
	if CompletedInWindow(rec, t.W0, t.W1) {
		t.Completed++
	}
}

// PerSecond returns x ÷ the window's length in seconds (WindowSeconds): 0 for an empty
// window.
func (t *WindowTotals) PerSecond(x float64) float64 {
	if t.W1 <= t.W0 {
		return 0
	}
	return x / WindowSeconds(t.W0, t.W1)
}

// OutputTPS is the output tokens/s of the window: tokens that arrived inside it ÷ its length
// (DESIGN §1).
func (t *WindowTotals) OutputTPS() float64 { return t.PerSecond(t.OutputTokens) }

// QPS is the successful requests that completed inside the window ÷ its length (DESIGN §1).
func (t *WindowTotals) QPS() float64 { return t.PerSecond(float64(t.Completed)) }

// Concurrency is the achieved concurrency of the window: the time-average number of requests
// in flight, BusyNS ÷ (W1 − W0) (DESIGN §1); 0 for an empty window.
func (t *WindowTotals) Concurrency() float64 {
	if t.W1 <= t.W0 {
		return 0
	}
	return t.BusyNS / float64(t.W1-t.W0)
}

// SliceTPS returns the output tokens/s of each slice: its tokens ÷ the slice length in
// seconds.
func (t *WindowTotals) SliceTPS() []float64 {
	out := append([]float64(nil), t.SliceTokens...)
	ToTPS(out, t.W0, t.W1)
	return out
}

// ToTPS divides the tokens of the len(tok) equal slices of [w0, w1) in place by the slice
// length in seconds.
func ToTPS(tok []float64, w0, w1 int64) {
	sec := float64(w1-w0) / float64(len(tok)) / 1e9
	for i := range tok {
		tok[i] /= sec
	}
}

// totals returns the WindowTotals of records over [w0, w1) with n slices.
func totals(records []Record, w0, w1 int64, n int) *WindowTotals {
	t := NewWindowTotals(w0, w1, n)
	for i := range records {
		t.Add(&records[i])
	}
	return t
}

// completions counts the records that CompletedInWindow [w0, w1).
func completions(records []Record, w0, w1 int64) int {
	n := 0
	for i := range records {
		if CompletedInWindow(&records[i], w0, w1) {
			n++
		}
	}
	return n
}

// SliceTokens returns the output tokens that arrived in each of n equal slices of the window
// [w0, w1) (Unix nanoseconds), from every record that CountsTokens (including ones sent
// before w0 or finishing after w1). It returns nil when n < 1 or the window is empty.
func SliceTokens(records []Record, w0, w1 int64, n int) []float64 {
	if n < 1 || w1 <= w0 {
		return nil
	}
	if int64(n) > w1-w0 {
		n = int(w1 - w0)
	}
	dst := make([]float64, n)
	for i := range records {
		TokensInWindow(&records[i], w0, w1, dst)
	}
	return dst
}

// SliceTPS returns the output tokens/s of each of n equal slices of the window [w0, w1): the
// tokens that arrived in the slice ÷ the slice length in seconds.
func SliceTPS(records []Record, w0, w1 int64, n int) []float64 {
	tok := SliceTokens(records, w0, w1, n)
	ToTPS(tok, w0, w1)
	return tok
}

// WindowOutputTokens returns the output tokens that arrived inside [w0, w1), from every
// record that CountsTokens.
func WindowOutputTokens(records []Record, w0, w1 int64) float64 {
	return totals(records, w0, w1, 1).OutputTokens
}

// LevelOutputTPS is the output tokens/s of the window [w0, w1) (WindowTotals.OutputTPS): 0
// for an empty window.
func LevelOutputTPS(records []Record, w0, w1 int64) float64 {
	return totals(records, w0, w1, 1).OutputTPS()
}

// WindowQPS is the successful requests that completed inside [w0, w1) per second
// (WindowTotals.QPS): 0 for an empty window.
func WindowQPS(records []Record, w0, w1 int64) float64 {
	return totals(records, w0, w1, 1).QPS()
}

// AchievedConcurrency is the time-average number of requests in flight over [w0, w1)
// (WindowTotals.Concurrency): 0 for an empty window.
func AchievedConcurrency(records []Record, w0, w1 int64) float64 {
	return totals(records, w0, w1, 1).Concurrency()
}

// SetPhases sets each record's phase from its send time: warmup before w0, measure when
// SentInWindow [w0, w1), drain from w1 on.
func SetPhases(records []Record, w0, w1 int64) {
	for i := range records {
		r := &records[i]
		switch {
		case SentInWindow(r, w0, w1):
			r.Phase = PhaseMeasure
		case r.Sent < w0:
			r.Phase = PhaseWarmup
		default:
			r.Phase = PhaseDrain
		}
	}
}

// Percentile returns the p-th percentile (p in [0, 100]) of sorted, an ascending slice, by
// linear interpolation between closest ranks: h = (n−1)·p/100, x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] −
// x[⌊h⌋]). This is numpy.percentile's default and R's quantile type 7, the one quantile of
// kneecap (the analysis's latency percentiles and the client self-check use it). It returns
// NaN for an empty slice or a p outside [0, 100] or NaN.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// DurationPercentile returns the p-th Percentile of ds (nanoseconds) as a duration, 0 when ds
// is empty. It sorts ds.
func DurationPercentile(ds []float64, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Float64s(ds)
	return time.Duration(Percentile(ds, p))
}
