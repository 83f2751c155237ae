package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/kneecap/kneecap/record"
)

// RefineRate chooses the next rate level an arrival-rate sweep adds after its planned ones
// (sweep.refine); it implements sweep.RateRefiner as Refine does sweep.Refiner: it returns
// the offered rate (requests/s) and why, 0 and "" when every answer lies close enough to a
// level run, or 0 and the reason when an added level broke the error-rate or stop_ttft rule.
func (r Refiner) RefineRate(levels []record.Level) (float64, string) {
	if why := r.addedBreach(levels); why != "" {
		return 0, why
	}
	attempted := make([]float64, 0, len(levels))
	for _, l := range levels {
		if l.Run.OfferedRPS > 0 {
			attempted = append(attempted, l.Run.OfferedRPS)
		}
	}
	res := Analyze(Summarize(levels, r.opts), Meta{}, r.opts)
	return RateRefinement(&res, attempted)
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
