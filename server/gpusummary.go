package server

import (
	"cmp"
	"slices"

	"github.com/kneecap/kneecap/record"
)

// point is one GPU's value at a reading's time (Unix nanoseconds).
type point struct {
	t int64
	v float64
}

// SummarizeGPU summarises the GPU readings (in time order) of the window [w0, w1) of Unix
// nanoseconds (DESIGN §3.10). The GPUs counted are those with a power reading in the window.
// Per GPU: the mean and p95 (type 7) of its power readings in the window, and its energy over
// [w0, w1]: the increase of its energy counter, interpolated linearly at w0 and at w1 between
// the readings around each (a decrease counts as a reset from 0), else the trapezoid integral
// of its power readings with the power interpolated the same way at w0 and w1; nil when no
// reading is at or before w0 or none at or after w1. The totals: the mean and p95 of the sum
// of the GPUs' power over the readings that hold every GPU's (the sums of the GPUs' means
// and p95s when none does), and the sum of their energies (nil when one is unknown). Util,
// SM active and SM clock are means over the GPUs and the window's readings, FB used the
// largest. It returns nil when no reading in the window holds a GPU's power; Source and
// From are left for the caller.
func SummarizeGPU(samples []GPUSample, w0, w1 int64) *record.GPUStats {
	lo, _ := slices.BinarySearchFunc(samples, w0, func(g GPUSample, t int64) int { return cmp.Compare(g.TUnixNS, t) })
	hi, _ := slices.BinarySearchFunc(samples, w1, func(g GPUSample, t int64) int { return cmp.Compare(g.TUnixNS, t) })
	in := samples[lo:hi]
	var keys []string
	ids := map[string]record.GPU{}
	for _, sm := range in {
		for _, g := range sm.GPUs {
			if g.PowerW == nil {
				continue
			}
			if _, ok := ids[g.key()]; !ok {
				keys = append(keys, g.key())
			}
			ids[g.key()] = g.GPU
		}
	}
	if len(keys) == 0 {
		return nil
	}
	st := &record.GPUStats{Samples: len(in)}
	slices.SortFunc(keys, func(a, b string) int { return compareGPU(ids[a], ids[b]) })
	counted := map[string]bool{}
	allCounter := true
	var total float64
	known := true
	for _, k := range keys {
		counted[k] = true
		r := record.GPUReading{GPU: ids[k]}
		powers := values(in, k, func(g *GPUValue) *float64 { return g.PowerW })
		r.PowerMeanW, r.PowerP95W = meanP95(powers)
		e, fromCounter, ok := gpuEnergy(samples, k, w0, w1)
		if ok {
			r.EnergyJ = &e
			total += e
			allCounter = allCounter && fromCounter
		} else {
			known = false
		}
		st.GPUs = append(st.GPUs, r)
	}
	if known {
		st.EnergyJ, st.EnergySource = &total, record.EnergyFromPower
		if allCounter {
			st.EnergySource = record.EnergyFromCounter
		}
	}
	st.PowerMeanW, st.PowerP95W = totalPower(in, counted, st.GPUs)
	st.UtilPct = meanOf(in, counted, func(g *GPUValue) *float64 { return g.UtilPct })
	st.SMActive = meanOf(in, counted, func(g *GPUValue) *float64 { return g.SMActive })
	st.SMClockMHz = meanOf(in, counted, func(g *GPUValue) *float64 { return g.SMClockMHz })
	st.FBUsedMiB = maxOf(in, counted, func(g *GPUValue) *float64 { return g.FBUsedMiB })
	return st
}

// gpuEnergy is GPU k's energy over [w0, w1] in J: from its energy counter (fromCounter),
// else from its power readings; ok is false when neither brackets the window.
func gpuEnergy(samples []GPUSample, k string, w0, w1 int64) (j float64, fromCounter, ok bool) {
	counter := series(samples, k, func(g *GPUValue) *float64 { return g.EnergyMJ })
	c := cumulative(counter)
	c0, ok0 := interpolate(c, w0)
	c1, ok1 := interpolate(c, w1)
	if ok0 && ok1 {
		return (c1 - c0) / 1e3, true, true
	}
	j, ok = trapezoid(series(samples, k, func(g *GPUValue) *float64 { return g.PowerW }), w0, w1)
	return j, false, ok
}

// series returns GPU k's values of field over the readings, in time order.
func series(samples []GPUSample, k string, field func(*GPUValue) *float64) []point {
	var out []point
	for _, sm := range samples {
		for i := range sm.GPUs {
			if g := &sm.GPUs[i]; g.key() == k {
				if v := field(g); v != nil {
					out = append(out, point{sm.TUnixNS, *v})
				}
				break
			}
		}
	}
	return out
}

// values returns GPU k's values of field over the readings.
func values(samples []GPUSample, k string, field func(*GPUValue) *float64) []float64 {
	var out []float64
	for _, p := range series(samples, k, field) {
		out = append(out, p.v)
	}
	return out
}

// cumulative turns counter readings into the counter's increase since the first reading,
// counting a decrease as a reset from 0 (the increase is then the new reading).
func cumulative(pts []point) []point {
	out := make([]point, len(pts))
	var sum float64
	for i, p := range pts {
		if i > 0 {
			if d := p.v - pts[i-1].v; d >= 0 {
				sum += d
			} else {
				sum += p.v
			}
		}
		out[i] = point{p.t, sum}
	}
	return out
}

// interpolate returns the value at t, linear between the points around t (a point at t
// itself is taken as is); ok is false when no point is at or before t or none at or after.
func interpolate(pts []point, t int64) (float64, bool) {
	i, found := slices.BinarySearchFunc(pts, t, func(p point, t int64) int { return cmp.Compare(p.t, t) })
	switch {
	case found:
		return pts[i].v, true
	case i == 0 || i == len(pts):
		return 0, false
	}
	a, b := pts[i-1], pts[i]
	return a.v + (b.v-a.v)*float64(t-a.t)/float64(b.t-a.t), true
}

// trapezoid is the trapezoid integral of the power points over [w0, w1], in J, the power at
// w0 and w1 interpolated; ok is false when the points do not bracket the window.
func trapezoid(pts []point, w0, w1 int64) (float64, bool) {
	p0, ok0 := interpolate(pts, w0)
	p1, ok1 := interpolate(pts, w1)
	if !ok0 || !ok1 {
		return 0, false
	}
	prev := point{w0, p0}
	var sum float64 // W·ns
	for _, p := range append(inside(pts, w0, w1), point{w1, p1}) {
		sum += float64(p.t-prev.t) * (p.v + prev.v) / 2
		prev = p
	}
	return sum / 1e9, true
}

// inside returns the points strictly inside (w0, w1).
func inside(pts []point, w0, w1 int64) []point {
	var out []point
	for _, p := range pts {
		if p.t > w0 && p.t < w1 {
			out = append(out, p)
		}
	}
	return out
}

// totalPower is the mean and p95 of the GPUs' summed power over the readings that hold every
// counted GPU's; without such a reading, the sums of the GPUs' own means and p95s.
func totalPower(in []GPUSample, counted map[string]bool, gpus []record.GPUReading) (mean, p95 float64) {
	var sums []float64
	for _, sm := range in {
		var sum float64
		n := 0
		for i := range sm.GPUs {
			if g := &sm.GPUs[i]; counted[g.key()] && g.PowerW != nil {
				sum += *g.PowerW
				n++
			}
		}
		if n == len(counted) {
			sums = append(sums, sum)
		}
	}
	if len(sums) > 0 {
		return meanP95(sums)
	}
	for _, g := range gpus {
		mean += g.PowerMeanW
		p95 += g.PowerP95W
	}
	return mean, p95
}

// meanP95 returns the mean and the p95 (type 7) of vs; 0, 0 for none.
func meanP95(vs []float64) (mean, p95 float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	for _, v := range vs {
		mean += v
	}
	sorted := slices.Sorted(slices.Values(vs))
	return mean / float64(len(vs)), record.Percentile(sorted, 95)
}

// meanOf is the mean of field over the counted GPUs and the readings; nil when none has it.
func meanOf(in []GPUSample, counted map[string]bool, field func(*GPUValue) *float64) *float64 {
	var sum float64
	n := 0
	eachValue(in, counted, field, func(v float64) { sum += v; n++ })
	if n == 0 {
		return nil
	}
	m := sum / float64(n)
	return &m
}

// maxOf is the largest of field over the counted GPUs and the readings; nil when none has it.
func maxOf(in []GPUSample, counted map[string]bool, field func(*GPUValue) *float64) *float64 {
	var out *float64
	eachValue(in, counted, field, func(v float64) {
		if out == nil || v > *out {
			out = &v
		}
	})
	return out
}

// eachValue calls f with each value of field the counted GPUs have in the readings.
func eachValue(in []GPUSample, counted map[string]bool, field func(*GPUValue) *float64, f func(float64)) {
	for _, sm := range in {
		for i := range sm.GPUs {
			if g := &sm.GPUs[i]; counted[g.key()] {
				if v := field(g); v != nil {
					f(*v)
				}
			}
		}
	}
}
