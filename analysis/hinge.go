package analysis

import (
	"fmt"
	"math"
)

// FitHinge fits the continuous linear-then-flat model y = a + b·min(x, c) by least squares.
// The breakpoint c is searched continuously over [min x, max x]: on each segment between
// consecutive distinct x the model is a free line on the left points and a constant on the
// right ones, whose unconstrained least-squares solution is optimal when the line meets the
// constant inside the segment (Hudson 1966); otherwise the optimum lies at a data point, all
// of which are evaluated. It returns the breakpoint c, the plateau a + b·c, the slope b and
// R². At least 3 finite points with 2 distinct x are needed (else an error wrapping ErrFit).
func FitHinge(x, y []float64) (Hinge, error) {
	bad := Hinge{Breakpoint: NaN(), PlateauTPS: NaN(), Slope: NaN(), R2: NaN()}
	a, b, c, sse, err := fitTwoPhase(x, y, false)
	if err != nil {
		return bad, fmt.Errorf("hinge: %w", err)
	}
	return Hinge{Breakpoint: Float(c), PlateauTPS: Float(a + b*c), Slope: Float(b), R2: Float(rSquared(y, sse))}, nil
}

// At returns the fitted hinge at x.
func (h Hinge) At(x float64) float64 {
	c := float64(h.Breakpoint)
	return float64(h.PlateauTPS) - float64(h.Slope)*(c-math.Min(x, c))
}

// Ramp is a flat-then-linear fit y = Base + Slope·max(0, x − Breakpoint).
type Ramp struct {
	// Breakpoint is where the linear growth starts, in units of x.
	Breakpoint float64
	// Base is the flat level before the breakpoint, in units of y.
	Base float64
	// Slope is the growth of y per unit of x past the breakpoint.
	Slope float64
	// R2 is the coefficient of determination.
	R2 float64
}

// FitRamp fits the continuous flat-then-linear model y = a + b·max(0, x − c) by least
// squares with the breakpoint searched continuously over [min x, max x], as FitHinge does
// (the left points share a constant, the right ones a line). It is used for the TTFT
// blow-up: queueing makes TTFT grow linearly with concurrency past saturation.
func FitRamp(x, y []float64) (Ramp, error) {
	a, b, c, sse, err := fitTwoPhase(x, y, true)
	if err != nil {
		return Ramp{math.NaN(), math.NaN(), math.NaN(), math.NaN()}, fmt.Errorf("ramp: %w", err)
	}
	return Ramp{Breakpoint: c, Base: a, Slope: b, R2: rSquared(y, sse)}, nil
}

// fitTwoPhase fits y = a + b·min(x, c) (ramp false) or y = a + b·max(0, x − c) (ramp true)
// and returns a, b, c and the SSE.
func fitTwoPhase(x, y []float64, ramp bool) (a, b, c, sse float64, err error) {
	if len(x) != len(y) {
		return 0, 0, 0, 0, fmt.Errorf("%d x but %d y: %w", len(x), len(y), ErrFit)
	}
	xs, ys := finiteSorted(x, y)
	if len(xs) < 3 || xs[0] == xs[len(xs)-1] {
		return 0, 0, 0, 0, fmt.Errorf("%d usable points with %d distinct x, need 3 and 2: %w", len(xs), countDistinct(xs), ErrFit)
	}
	feature := func(xi, c float64) float64 {
		if ramp {
			return math.Max(0, xi-c)
		}
		return math.Min(xi, c)
	}
	// fitAt solves the linear least squares in (a, b) for a fixed breakpoint c.
	fitAt := func(c float64) (a, b, sse float64) {
		var sf, sy, sff, sfy float64
		n := float64(len(xs))
		for i := range xs {
			f := feature(xs[i], c)
			sf += f
			sy += ys[i]
			sff += f * f
			sfy += f * ys[i]
		}
		den := n*sff - sf*sf
		if math.Abs(den) <= 1e-12*math.Max(1, n*sff) {
			b = 0
			a = sy / n
		} else {
			b = (n*sfy - sf*sy) / den
			a = (sy - b*sf) / n
		}
		for i := range xs {
			r := ys[i] - a - b*feature(xs[i], c)
			sse += r * r
		}
		return a, b, sse
	}
	best := math.Inf(1)
	try := func(cc float64) {
		if !finite(cc) || cc < xs[0] || cc > xs[len(xs)-1] {
			return
		}
		if aa, bb, s := fitAt(cc); s < best {
			a, b, c, best = aa, bb, cc, s
		}
	}
	for _, xi := range xs {
		try(xi)
	}
	// Interior candidates: split after index j (left xs[0..j], right xs[j+1..]).
	for j := 0; j+1 < len(xs); j++ {
		if xs[j] == xs[j+1] {
			continue
		}
		left, right := xs[:j+1], xs[j+1:]
		ly, ry := ys[:j+1], ys[j+1:]
		if ramp {
			// constant on the left, line on the right: c = (m − a_r)/b_r
			m := mean(ly)
			if ar, br, ok := line(right, ry); ok && br != 0 {
				try((m - ar) / br)
			}
		} else {
			// line on the left, constant on the right: c = (m − a_l)/b_l
			m := mean(ry)
			if al, bl, ok := line(left, ly); ok && bl != 0 {
				try((m - al) / bl)
			}
		}
	}
	if math.IsInf(best, 0) {
		return 0, 0, 0, 0, fmt.Errorf("no breakpoint fits: %w", ErrFit)
	}
	return a, b, c, best, nil
}

// line fits y = a + b·x by least squares; ok is false with fewer than 2 distinct x.
func line(x, y []float64) (a, b float64, ok bool) {
	n := float64(len(x))
	if len(x) < 2 {
		return 0, 0, false
	}
	mx, my := mean(x), mean(y)
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if !(sxx > 0) || n < 2 {
		return 0, 0, false
	}
	b = sxy / sxx
	return my - b*mx, b, true
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// countDistinct returns the number of distinct values of the sorted slice v.
func countDistinct(v []float64) int {
	n := 0
	for i := range v {
		if i == 0 || v[i] != v[i-1] {
			n++
		}
	}
	return n
}
