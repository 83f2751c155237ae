package analysis

import (
	"fmt"
	"math"
	"slices"
)

// RefineTolerance is how close (relatively) a measured level must be to an answer for the
// answer to need no added level: 5%, finer than any sweep's level spacing worth adding to.
const RefineTolerance = 0.05

// Refinement chooses the next level a sweep adds after its planned ones (sweep.refine). The
// answers a capacity review quotes are read between measured levels: the SLO limit
// (interpolated on log concurrency between the first failing level and the valid one below),
// the headline knee, the TTFT blow-up and the efficient point when it is not the knee (read
// from fitted curves). Each lies in a bracket
// [lo, hi] of attempted concurrencies; the answer farthest (on log concurrency) from both
// ends of its bracket gets a level at its estimate, rounded, and kept within the middle half
// of the bracket on log concurrency, so that every added level at least quarters the
// bracket's log width even when the estimate sits near one end (the SLO limit's bracket then
// closes as in bisection). An answer needs no level when an attempted level lies within
// RefineTolerance of it, when no integer lies strictly inside its bracket, or when it lies
// outside the attempted range (no extrapolation: the planned levels bound the search).
// Ties go to the SLO limit, then the knee, then the blow-up, then the efficient point.
//
// attempted holds the concurrency of every level run so far, valid or not: a level that
// came out invalid is not proposed again, and it still bounds brackets and counts as near an
// answer (a level added at an answer that came out not steady ends the search there; the
// report shows it invalid). It returns 0 when no answer needs a level, else
// the concurrency and why, for example "SLO limit ≈ 41.3 lies between levels 32 and 64".
func Refinement(res *Result, attempted []int) (concurrency int, why string) {
	if res == nil || len(attempted) == 0 {
		return 0, ""
	}
	cs := slices.Clone(attempted)
	slices.Sort(cs)
	cs = slices.Compact(cs)
	type answer struct {
		name string
		v    Float
	}
	var answers []answer
	if res.SLO.Limit != "" {
		// The limit lies between a passing and a failing level only when some level fails.
		answers = append(answers, answer{"SLO limit", res.SLO.MaxConcurrency})
	}
	if res.Knee != nil {
		answers = append(answers, answer{"knee", res.Knee.Concurrency})
	}
	if res.TTFTBlowup != nil {
		answers = append(answers, answer{"TTFT blow-up", res.TTFTBlowup.Concurrency})
	}
	if e := res.EfficientPoint; e != nil && (res.Knee == nil || res.Knee.Rule == RulePlateauOnset) {
		// Under the marginal-gain rule the efficient point is the knee itself.
		answers = append(answers, answer{"efficient point", e.Concurrency})
	}
	best := 0.0
	for _, a := range answers {
		v := float64(a.v)
		if !a.v.OK() || v <= float64(cs[0]) || v >= float64(cs[len(cs)-1]) {
			continue
		}
		i, _ := slices.BinarySearch(cs, int(math.Ceil(v))) // first cs[i] ≥ v; v is inside the range
		lo, hi := cs[i-1], cs[i]
		gap := min(math.Log(v/float64(lo)), math.Log(float64(hi)/v))
		if gap <= math.Log1p(RefineTolerance) || gap <= best {
			continue
		}
		n, ok := refinePoint(v, lo, hi)
		if !ok {
			continue
		}
		best = gap
		concurrency = n
		why = fmt.Sprintf("%s ≈ %s lies between levels %d and %d", a.name, a.v.Format(), lo, hi)
	}
	return concurrency, why
}

// refinePoint is the level to add for an estimate v inside the bracket (lo, hi): v rounded,
// kept within the middle half of the bracket on log concurrency and strictly inside it.
func refinePoint(v float64, lo, hi int) (int, bool) {
	r := float64(hi) / float64(lo)
	from := int(math.Ceil(float64(lo) * math.Pow(r, 0.25)))
	to := int(math.Floor(float64(lo) * math.Pow(r, 0.75)))
	n := int(math.Round(v))
	if from <= to {
		n = min(max(n, from), to)
	}
	n = min(max(n, lo+1), hi-1)
	return n, lo < n && n < hi
}

// RateRefinement is Refinement on the rate axis: the answers of an arrival-rate run read
// between measured levels are the SLO limit (slo_rps, between the last passing and the first
// failing level), the capacity (between the largest sustained and the smallest unsustained
// offered rate; not when it is only a bound) and the TTFT blow-up rate. Each lies in a bracket
// (lo, hi) of attempted offered rates; the answer farthest on log rate from both ends of its
// bracket gets a level at its estimate, kept within the middle half of the bracket on log rate
// (so every added level at least quarters the bracket) and rounded to 3 significant figures.
// An answer needs no level when an attempted rate lies within RefineTolerance of it or when it
// lies outside the attempted range. Ties go to the SLO limit, then the capacity, then the
// blow-up. It returns 0 and "" when no answer needs a level, else the rate and why, for
// example "capacity ≈ 41.2 requests/s lies between levels 35.4 and 48.1".
func RateRefinement(res *Result, attempted []float64) (rps float64, why string) {
	if res == nil || res.Rate == nil || len(attempted) == 0 {
		return 0, ""
	}
	rs := slices.Clone(attempted)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	rr := res.Rate
	type answer struct {
		name string
		v    Float
	}
	var answers []answer
	if res.SLO.Limit != "" {
		answers = append(answers, answer{"SLO limit", rr.SLORPS})
	}
	if rr.CapacityBound == "" {
		answers = append(answers, answer{"capacity", rr.CapacityRPS})
	}
	answers = append(answers, answer{"TTFT blow-up", rr.TTFTBlowupRPS})
	best := 0.0
	for _, a := range answers {
		v := float64(a.v)
		if !a.v.OK() || v <= rs[0] || v >= rs[len(rs)-1] {
			continue
		}
		i, _ := slices.BinarySearch(rs, v) // first rs[i] ≥ v; v is inside the range
		lo, hi := rs[i-1], rs[i]
		gap := min(math.Log(v/lo), math.Log(hi/v))
		if gap <= math.Log1p(RefineTolerance) || gap <= best {
			continue
		}
		p := rateRefinePoint(v, lo, hi)
		if !(lo < p && p < hi) {
			continue
		}
		best, rps = gap, p
		why = fmt.Sprintf("%s ≈ %s requests/s lies between levels %s and %s", a.name, formatRPS(a.v), formatRPS(Float(lo)), formatRPS(Float(hi)))
	}
	return rps, why
}

// rateRefinePoint is the rate to add for an estimate v inside the bracket (lo, hi): v kept
// within the middle half of the bracket on log rate, rounded to 3 significant figures.
func rateRefinePoint(v, lo, hi float64) float64 {
	r := hi / lo
	v = min(max(v, lo*math.Pow(r, 0.25)), lo*math.Pow(r, 0.75))
	p := math.Pow(10, 2-math.Floor(math.Log10(v)))
	return math.Round(v*p) / p
}
