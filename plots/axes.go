package plots

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// finish computes the ranges, runs the decorations and returns the plot. Every axis range
// ends on a tick (DESIGN §5.1): linear axes on a multiple of the labelled step, log2
// concurrency axes on a power of two, log latency axes on 1, 2 or 5 × 10^k.
func (b *builder) finish() (*builder, error) {
	if b.empty || len(b.xs) == 0 {
		return b, nil
	}
	r, ok := b.extent()
	if !ok {
		return b, nil
	}
	if b.autoLogY && !b.logY {
		lo, zero := math.Inf(1), false
		for _, y := range b.ys {
			switch {
			case finite(y) && y > 0:
				lo = math.Min(lo, y)
			case finite(y):
				zero = true // a value of 0 (or below) has no place on a log axis
			}
		}
		if finite(lo) && r.dataTop/lo > 100 && !zero {
			b.logY, r.ymin = true, lo
		}
	}
	r.xmin, r.xmax = axisRange(r.xmin, r.xmax, b.logX, pow2Range)
	r.ymin, r.ymax = axisRange(r.ymin, r.dataTop, b.logY, range125)
	for _, d := range b.decorate {
		if err := d(r); err != nil {
			return nil, err
		}
	}
	if b.labels != nil {
		b.labels.marks, b.labels.lines = b.marks, b.lines
		b.p.Add(b.labels)
	}
	b.p.X.Min, b.p.X.Max = r.xmin, r.xmax
	b.p.Y.Min, b.p.Y.Max = r.ymin, r.ymax
	b.p.X.Tick.Marker, b.p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	if b.logX {
		b.p.X.Scale, b.p.X.Tick.Marker = plot.LogScale{}, pow2Ticks{}
	}
	if b.logY {
		b.p.Y.Scale, b.p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	return b, nil
}

// extent returns the tracked data's extent (xmin … xmax, ymin … dataTop), widened in x by
// the vertical markers; ok is false when no point can be drawn on the axes' scales.
func (b *builder) extent() (ranges, bool) {
	r := ranges{xmin: math.Inf(1), xmax: math.Inf(-1), ymin: math.Inf(1), dataTop: math.Inf(-1)}
	for i := range b.xs {
		x, y := b.xs[i], b.ys[i]
		if !finite(x) || !finite(y) || b.logX && x <= 0 || b.logY && y <= 0 {
			continue
		}
		r.xmin, r.xmax = math.Min(r.xmin, x), math.Max(r.xmax, x)
		r.ymin, r.dataTop = math.Min(r.ymin, y), math.Max(r.dataTop, y)
	}
	if !finite(r.xmin) {
		return r, false
	}
	for _, x := range b.xOnly {
		if finite(x) && (!b.logX || x > 0) {
			r.xmin, r.xmax = math.Min(r.xmin, x), math.Max(r.xmax, x)
		}
	}
	return r, true
}

// axisRange returns the range of an axis showing lo … hi: on a log scale logRange's, on a
// linear one from 0 (or lo when negative) to hi plus 4%, both ends on a labelled tick of
// niceTicks.
func axisRange(lo, hi float64, log bool, logRange func(lo, hi float64) (float64, float64)) (float64, float64) {
	if log {
		return logRange(lo, hi)
	}
	lo = math.Min(0, lo)
	if hi <= lo {
		hi = lo + math.Max(math.Abs(lo), 1)
	}
	hi += 0.04 * (hi - lo)
	// Rounding out may change the step; three rounds settle it (the step only grows).
	for range 3 {
		step := niceStep(lo, hi)
		lo, hi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	}
	return lo, hi
}

// pow2Range widens [lo, hi] (lo > 0) to powers of two with at least a quarter octave of
// room on either side, so the end glyphs are not cut by the axes.
func pow2Range(lo, hi float64) (float64, float64) {
	return math.Exp2(math.Floor(math.Log2(lo) - 0.25)), math.Exp2(math.Ceil(math.Log2(hi) + 0.25))
}

// range125 widens [lo, hi] (lo > 0) by 10% on either side (log scale) to the nearest 1, 2
// or 5 × 10^k outside it, ticks of logTicks.
func range125(lo, hi float64) (float64, float64) {
	lo, hi = lo/1.1, hi*1.1
	down, up := math.Inf(1), math.Inf(-1)
	for k := math.Floor(math.Log10(lo)) - 1; k <= math.Ceil(math.Log10(hi))+1; k++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, k)
			if v <= lo*(1+1e-12) {
				down = v
			}
			if v >= hi*(1-1e-12) && !finite(up) {
				up = v
			}
		}
	}
	return down, up
}

// niceStep is the labelled step niceTicks uses on [lo, hi].
func niceStep(lo, hi float64) float64 {
	raw := (hi - lo) / 7
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// logTicks marks a log axis at 1 … 9 × 10^k, labelling the powers of ten and, over fewer
// than three decades, 2 and 5 × 10^k too (range125's ends are among the ticks).
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	few := math.Log10(hi/lo) < 3
	var ts []plot.Tick
	for k := math.Floor(math.Log10(lo)); k <= math.Ceil(math.Log10(hi)); k++ {
		for m := 1.0; m <= 9; m++ {
			v := m * math.Pow(10, k)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || few && (m == 2 || m == 5) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
