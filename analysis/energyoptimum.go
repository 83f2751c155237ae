package analysis

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// The energy-optimal load (DESIGN §4.16): where on the load axis J per output token is
// lowest, read from a curve fitted to the levels around the lowest one, with a residual
// bootstrap interval as the knee's.

// energyOptimum returns the energy-optimal load among cands, the levels of all (the valid
// levels with a J per output token, sorted along the axis) a replica can serve (sustained): the
// curve J(x) = a/x + b + c·x (energyCurve) fitted by least squares to the optimumWindow levels
// of cands around the lowest J per output token (all of them when fewer) is lowest at x* on
// their range (√(a/c) when a, c > 0 and it lies inside, else an end of the range); its J per
// output token and power are interpolated between the levels of all around it as at the knee
// (energyAt). With fewer than three candidates, or where the curve cannot be fitted (a
// warning says there is no interval), or where x* lies outside the best candidate's neighbours
// (on a curve with one lowest point it lies between them: the fit misplaced it), x* is the
// candidate of lowest J per output token, without an interval. Its interval is the residual bootstrap's
// (residualBootstrap) of x* on the same levels.
func (a *analyzer) energyOptimum(all, pts []point) EnergyPoint {
	if len(pts) == 0 {
		return noEnergyPoint(math.NaN())
	}
	jOf := func(p point) float64 { return float64(p.lv.GPU.JPerOutputToken) }
	best := 0
	for i, p := range pts {
		if jOf(p) < jOf(pts[best]) {
			best = i
		}
	}
	lo := min(max(best-optimumWindow/2, 0), max(len(pts)-optimumWindow, 0))
	win := pts[lo:min(lo+optimumWindow, len(pts))]
	x, y := make([]float64, len(win)), make([]float64, len(win))
	for i, p := range win {
		x[i], y[i] = p.x, jOf(p)
	}
	curve, ok := fitEnergyCurve(x, y)
	if !ok {
		if a.opts.Bootstrap > 0 {
			a.warnOnce(energyFewLevels(len(x)))
		}
		return a.energyAt(all, pts[best].x)
	}
	xs := curve.lowest(x[0], x[len(x)-1])
	if nb, na := pts[max(best-1, 0)].x, pts[min(best+1, len(pts)-1)].x; xs < nb || xs > na {
		// On a curve with one lowest point it lies between the best level's neighbours; the
		// fit put it elsewhere, where the levels measured more: the best level is the
		// optimum, without an interval.
		return a.energyAt(all, pts[best].x)
	}
	out := a.energyAt(all, xs)
	if iv, ok := a.optimumInterval(x, y, curve); ok {
		out.Interval = &iv
	}
	return out
}

// optimumInterval returns the bootstrap 95% interval of x*, the lowest point of curve (fitted
// to (x, y)) on x's range: the residual bootstrap of the knee (residualBootstrap), each
// resample's curve refitted and its lowest point on the range taken. false when there are no
// resamples (Options.Bootstrap 0), too few levels (a warning says so) or too few resamples
// gave a value.
func (a *analyzer) optimumInterval(x, y []float64, curve energyCurve) ([2]Float, bool) {
	if a.opts.Bootstrap <= 0 {
		return [2]Float{}, false
	}
	if len(x) < minIntervalLevels {
		a.warnOnce(energyFewLevels(len(x)))
		return [2]Float{}, false
	}
	lo, hi := x[0], x[len(x)-1]
	iv := a.residualBootstrap(x, y, curve.at, []string{"energy-optimal load"}, func(ys []float64) []float64 {
		r, ok := fitEnergyCurve(x, ys)
		if !ok {
			return nil
		}
		return []float64{r.lowest(lo, hi)}
	})[0]
	return iv, iv[0].OK() && iv[1].OK()
}

// energyCurve is J per output token against the load x, a/v + b + c·v in v = x ÷ m (m, the
// fitted levels' mean x, scales the fit): the idle power spread over more tokens as the load
// grows (a/x), an energy per token (b), and the cost of running more at once (c·x: a larger
// batch's decode step takes longer, each token drawing the power longer). It is the exact form
// of J = P ÷ TPS below saturation for the simulator's power P = idle + (max − idle)·running ÷ S
// and step time base + per_seq·running (DESIGN §6), with its lowest point at √(a/c).
type energyCurve struct{ m, a, b, c float64 }

// at returns the curve's J per output token at x.
func (e energyCurve) at(x float64) float64 {
	v := x / e.m
	return e.a/v + e.b + e.c*v
}

// lowest returns the x in [lo, hi] where the curve is lowest: m·√(a/c) when a, c > 0 and it
// lies inside, else the end where it is lower (lo on a tie: the lighter load).
func (e energyCurve) lowest(lo, hi float64) float64 {
	best := lo
	if e.at(hi) < e.at(best) {
		best = hi
	}
	if e.a > 0 && e.c > 0 {
		if v := e.m * math.Sqrt(e.a/e.c); v > lo && v < hi && e.at(v) < e.at(best) {
			best = v
		}
	}
	return best
}

// fitEnergyCurve fits the energyCurve to (x, y) by linear least squares in its three terms
// (gonum's QR solve, as quadraticStart fits the USL's start); false with fewer than three
// distinct positive x or a singular system.
func fitEnergyCurve(x, y []float64) (energyCurve, bool) {
	if len(x) < 3 || len(x) != len(y) {
		return energyCurve{}, false
	}
	distinct := slices.Clone(x)
	slices.Sort(distinct)
	if len(slices.Compact(distinct)) < 3 || !(distinct[0] > 0) {
		return energyCurve{}, false
	}
	var m float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	A := mat.NewDense(len(x), 3, nil)
	for i, xi := range x {
		v := xi / m
		A.SetRow(i, []float64{1 / v, 1, v})
	}
	var coef mat.VecDense
	if err := coef.SolveVec(A, mat.NewVecDense(len(y), slices.Clone(y))); err != nil {
		return energyCurve{}, false
	}
	e := energyCurve{m: m, a: coef.AtVec(0), b: coef.AtVec(1), c: coef.AtVec(2)}
	if !finite(e.a) || !finite(e.b) || !finite(e.c) {
		return energyCurve{}, false
	}
	return e, true
}
