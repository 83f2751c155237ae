package analysis

import (
	"fmt"
	"math"
	"slices"
)

// RefineTolerance is how close (relatively) a measured level must be to an answer for the
// answer to need no added level: 5%, finer than any sweep's level spacing worth adding to.
const RefineTolerance = 0.05

// Refinement chooses the next level a sweep adds after its planned ones (sweep.refine), on
// res's axis. The answers a capacity review quotes are read between measured levels. On the
// concurrency axis: the SLO limit (interpolated on log concurrency between the first failing
// level and the valid one below), the headline knee, the TTFT blow-up and the efficient point
// when it is not the knee (read from fitted curves). On the rate axis: the SLO limit (slo_rps,
// between the last passing and the first failing level), the capacity (between the largest
// sustained and the smallest unsustained offered rate; not when it is only a bound) and the
// TTFT blow-up rate. Each lies in a bracket (lo, hi) of attempted levels; the answer farthest
// (on log x) from both ends of its bracket gets a level at its estimate, kept within the
// middle half of the bracket on log x, so that every added level at least quarters the
// bracket's log width even when the estimate sits near one end (the SLO limit's bracket then
// closes as in bisection): a concurrency rounded to a whole number strictly inside the
// bracket, a rate rounded to 3 significant figures (refinePoint). An answer needs no level
// when an attempted level lies within RefineTolerance of it, when no level can lie strictly
// inside its bracket (no integer, on the concurrency axis), or when it lies outside the
// attempted range (no extrapolation: the planned levels bound the search). Ties go to the
// SLO limit, then the knee (the capacity), then the blow-up, then the efficient point.
//
// attempted holds the x (concurrency, or offered rate) of every level run so far, valid or
// not: a level that came out invalid is not proposed again, and it still bounds brackets and
// counts as near an answer (a level added at an answer that came out not steady ends the
// search there; the report shows it invalid). It returns 0 when no answer needs a level, else
// the level's x and why, for example "SLO limit ≈ 41.3 lies between levels 32 and 64" or
// "capacity ≈ 41.2 requests/s lies between levels 35.4 and 48.1".
func Refinement(res *Result, attempted []float64) (x float64, why string) {
	if res == nil || len(attempted) == 0 {
		return 0, ""
	}
	axis := res.Axis()
	xs := slices.Clone(attempted)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	best := 0.0
	for _, a := range refineAnswers(res, axis) {
		v := float64(a.v)
		if !a.v.OK() || v <= xs[0] || v >= xs[len(xs)-1] {
			continue
		}
		i, _ := slices.BinarySearch(xs, v) // first xs[i] ≥ v; v is inside the range
		lo, hi := xs[i-1], xs[i]
		gap := min(math.Log(v/lo), math.Log(hi/v))
		if gap <= math.Log1p(RefineTolerance) || gap <= best {
			continue
		}
		p, ok := refinePoint(axis, v, lo, hi)
		if !ok {
			continue
		}
		best, x = gap, p
		if axis.IsRate() {
			why = fmt.Sprintf("%s ≈ %s requests/s lies between levels %s and %s", a.name, formatRPS(a.v), formatRPS(Float(lo)), formatRPS(Float(hi)))
		} else {
			why = fmt.Sprintf("%s ≈ %s lies between levels %d and %d", a.name, a.v.Format(), int(lo), int(hi))
		}
	}
	return x, why
}

// refineAnswer is an answer Refinement may add a level at: its name and estimate.
type refineAnswer struct {
	name string
	v    Float
}

// refineAnswers are res's answers read between levels on axis, in the order ties go to.
func refineAnswers(res *Result, axis Axis) []refineAnswer {
	var answers []refineAnswer
	if axis.IsRate() {
		rr := res.Rate
		if rr == nil {
			return nil
		}
		if res.SLO.Limit != "" {
			answers = append(answers, refineAnswer{"SLO limit", rr.SLORPS})
		}
		if rr.CapacityBound == "" {
			answers = append(answers, refineAnswer{"capacity", rr.CapacityRPS})
		}
		return append(answers, refineAnswer{"TTFT blow-up", rr.TTFTBlowupRPS})
	}
	if res.SLO.Limit != "" {
		// The limit lies between a passing and a failing level only when some level fails.
		answers = append(answers, refineAnswer{"SLO limit", res.SLO.MaxConcurrency})
	}
	if res.Knee != nil {
		answers = append(answers, refineAnswer{"knee", res.Knee.Concurrency})
	}
	if res.TTFTBlowup != nil {
		answers = append(answers, refineAnswer{"TTFT blow-up", res.TTFTBlowup.Concurrency})
	}
	if e := res.EfficientPoint; e != nil && (res.Knee == nil || res.Knee.Rule == RulePlateauOnset) {
		// Under the marginal-gain rule the efficient point is the knee itself.
		answers = append(answers, refineAnswer{"efficient point", e.Concurrency})
	}
	return answers
}

// refinePoint is the level to add for an estimate v inside the bracket (lo, hi) on axis: v
// kept within the middle half of the bracket on log x, then a concurrency rounded (and kept
// strictly inside the bracket), a rate rounded to 3 significant figures; ok is false when
// the point is not strictly inside the bracket.
func refinePoint(axis Axis, v, lo, hi float64) (p float64, ok bool) {
	r := hi / lo
	if axis.IsRate() {
		v = min(max(v, lo*math.Pow(r, 0.25)), lo*math.Pow(r, 0.75))
		s := math.Pow(10, 2-math.Floor(math.Log10(v)))
		p = math.Round(v*s) / s
		return p, lo < p && p < hi
	}
	l, h := int(lo), int(hi)
	from := int(math.Ceil(lo * math.Pow(r, 0.25)))
	to := int(math.Floor(lo * math.Pow(r, 0.75)))
	n := int(math.Round(v))
	if from <= to {
		n = min(max(n, from), to)
	}
	n = min(max(n, l+1), h-1)
	return float64(n), l < n && n < h
}
