package analysis

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Curve is the curvature of a curve for Kneedle.
type Curve string

// Direction is whether a curve increases or decreases, for Kneedle.
type Direction string

// Kneedle curve shapes (the kneed package's curve and direction arguments).
const (
	Concave    Curve     = "concave"
	convex     Curve     = "convex"
	Increasing Direction = "increasing"
	decreasing Direction = "decreasing"
)

// KneedleOptions configures LocateKnee; the zero value is kneed's defaults for a concave
// increasing curve (S = 1, offline, interp1d).
type KneedleOptions struct {
	// S is the sensitivity: how many mean x-steps the difference curve must fall below a local
	// maximum before that maximum is a knee. 0 means 1.
	S float64
	// Curve is concave (default) or convex.
	Curve Curve
	// Direction is increasing (default) or decreasing.
	Direction Direction
	// Online keeps scanning after the first knee and returns the last one (kneed's
	// online=True); offline returns the first.
	Online bool
	// PolynomialDegree > 0 smooths y with a least-squares polynomial of that degree before
	// normalising (kneed's interp_method="polynomial"); 0 uses the data as is
	// (interp_method="interp1d", which at the data points is the identity).
	PolynomialDegree int
}

// KneedleResult is the knee LocateKnee found.
type KneedleResult struct {
	// Knee is the x of the knee, in units of the input x.
	Knee float64
	// KneeY is the (unsmoothed) y at Knee.
	KneeY float64
	// NormKnee is the knee's x normalised to [0, 1].
	NormKnee float64
	// All lists every knee found in order of detection (online mode finds several).
	All []float64
}

// LocateKnee finds the knee of the curve (x, y) with the Kneedle algorithm (Satopää, Albrecht,
// Irwin and Raghavan, "Finding a 'Kneedle' in a Haystack", ICDCSW 2011), following the Python
// kneed package (KneeLocator) step by step: optionally smooth y; normalise x and y to [0, 1];
// turn the curve into a concave increasing one (flip y for concave decreasing, 1 − y for
// convex decreasing, flip(1 − y) for convex increasing); take the difference curve
// y_d = y_n − x_n; find its local maxima and minima (comparisons ≥ and ≤ with both
// neighbours, edges compared with themselves); each maximum sets the threshold
// y_d(max) − S·mean(Δx_n), a minimum resets it to 0; a knee is declared at the last maximum
// when y_d falls below the threshold. Points are sorted by x; non-finite points are dropped.
// ok is false when there is no knee (a flat or straight curve, fewer than 3 points).
func LocateKnee(x, y []float64, o KneedleOptions) (res KneedleResult, ok bool, err error) {
	if o.S == 0 {
		o.S = 1
	}
	if o.Curve == "" {
		o.Curve = Concave
	}
	if o.Direction == "" {
		o.Direction = Increasing
	}
	if o.Curve != Concave && o.Curve != convex {
		return res, false, fmt.Errorf("kneedle: curve %q: want concave or convex", o.Curve)
	}
	if o.Direction != Increasing && o.Direction != decreasing {
		return res, false, fmt.Errorf("kneedle: direction %q: want increasing or decreasing", o.Direction)
	}
	if len(x) != len(y) {
		return res, false, fmt.Errorf("kneedle: %d x but %d y", len(x), len(y))
	}
	xs, ys := finiteSorted(x, y)
	n := len(xs)
	if n < 3 {
		return res, false, nil
	}
	ds := ys
	if o.PolynomialDegree > 0 {
		ds = polySmooth(xs, ys, min(o.PolynomialDegree, n-1))
	}
	xn, okx := normalize(xs)
	yn, oky := normalize(ds)
	if !okx || !oky {
		return res, false, nil
	}
	// Convert elbows to knees (kneed's transform_y).
	switch {
	case o.Direction == decreasing && o.Curve == Concave:
		slices.Reverse(yn)
	case o.Direction == decreasing && o.Curve == convex:
		m := slices.Max(yn)
		for i := range yn {
			yn[i] = m - yn[i]
		}
	case o.Direction == Increasing && o.Curve == convex:
		m := slices.Max(yn)
		for i := range yn {
			yn[i] = m - yn[i]
		}
		slices.Reverse(yn)
	}
	yd := make([]float64, n)
	for i := range yd {
		yd[i] = yn[i] - xn[i]
	}
	isMax := make([]bool, n)
	isMin := make([]bool, n)
	var maxima []int
	for i := range yd {
		prev, next := yd[max(i-1, 0)], yd[min(i+1, n-1)]
		if yd[i] >= prev && yd[i] >= next {
			isMax[i] = true
			maxima = append(maxima, i)
		}
		if yd[i] <= prev && yd[i] <= next {
			isMin[i] = true
		}
	}
	if len(maxima) == 0 {
		return res, false, nil
	}
	var step float64
	for i := 1; i < n; i++ {
		step += xn[i] - xn[i-1]
	}
	step = math.Abs(step / float64(n-1))
	threshold, thresholdIndex := 0.0, maxima[0]
	found := false
	for i := maxima[0]; i < n; i++ {
		if xn[i] == 1.0 {
			break
		}
		if isMax[i] {
			threshold = yd[i] - o.S*step
			thresholdIndex = i
		}
		if isMin[i] {
			threshold = 0
		}
		if yd[i+1] < threshold {
			idx := thresholdIndex
			if (o.Curve == convex && o.Direction == Increasing) || (o.Curve == Concave && o.Direction == decreasing) {
				idx = n - 1 - thresholdIndex
			}
			knee := xs[idx]
			res.Knee, res.KneeY, res.NormKnee = knee, ys[idx], xn[thresholdIndex]
			if !slices.Contains(res.All, knee) {
				res.All = append(res.All, knee)
			}
			found = true
			if !o.Online {
				return res, true, nil
			}
		}
	}
	return res, found, nil
}

// normalize maps v linearly onto [0, 1]; ok is false when v is constant.
func normalize(v []float64) ([]float64, bool) {
	lo, hi := slices.Min(v), slices.Max(v)
	if !(hi > lo) {
		return nil, false
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = (x - lo) / (hi - lo)
	}
	return out, true
}

// polySmooth returns the least-squares polynomial of the given degree evaluated at x
// (numpy.polyfit then poly1d); on a singular system it returns y unchanged.
func polySmooth(x, y []float64, degree int) []float64 {
	n := len(x)
	// Centre and scale x for conditioning; the fitted values do not depend on it.
	mx := mean(x)
	sc := 0.0
	for _, v := range x {
		sc = math.Max(sc, math.Abs(v-mx))
	}
	if sc == 0 {
		return y
	}
	A := mat.NewDense(n, degree+1, nil)
	for i := range x {
		t := (x[i] - mx) / sc
		p := 1.0
		for j := 0; j <= degree; j++ {
			A.Set(i, j, p)
			p *= t
		}
	}
	var coef mat.VecDense
	if err := coef.SolveVec(A, mat.NewVecDense(n, slices.Clone(y))); err != nil {
		return y
	}
	var fit mat.VecDense
	fit.MulVec(A, &coef)
	out := make([]float64, n)
	for i := range out {
		out[i] = fit.AtVec(i)
	}
	return out
}
