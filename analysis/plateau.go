package analysis

import (
	"fmt"
	"math"
	"strings"
)

// The capacity rules of an arrival-rate run (RateResult.CapacityRule, DESIGN §4.15).
const (
	// capacityRuleSplit: between the sustained and the unsustained levels, from the
	// completion rate of the latter.
	capacityRuleSplit = "sustainable_split"
	// CapacityRulePlateau: the onset of the plateau of output TPS over the offered rate, for a
	// table that cannot say which levels were sustained.
	CapacityRulePlateau = "tps_plateau"
)

// plateauRuleName names the plateau rule as capacity_reason and the reports do.
const plateauRuleName = "plateau of output TPS over the offered rate (no achieved rates in the table)"

// verdictless reports whether the levels carry nothing to judge their sustainability by: no
// backlog, realised or achieved rate at any of them (a published table of offered rate,
// throughput and latencies).
func (r *rater) verdictless() bool {
	for _, p := range r.pts {
		if l := p.lv; l.BacklogGrowthRPS.OK() || l.RealizedRPS.OK() || l.AchievedRPS.OK() {
			return false
		}
	}
	return len(r.pts) > 0
}

// plateauCapacity reads the capacity of a table every level of which counted as sustainable
// and that cannot say otherwise (verdictless) from the plateau of its output TPS over the
// offered rate (DESIGN §4.15): the continuous hinge y = a + b·min(x, c) (fitHinge), accepted
// as the closed loop's plateau rule accepts a sharp knee — slope > 0, R² ≥ sharpMinR2, at
// least minRiseLevels levels more than RefineTolerance below c and two more than it above,
// the measured TPS growing less than knee_gain per doubling across those — gives capacity_rps
// = c, capacity_tps = the plateau a + b·c, and as interval and bracket the plateau's onset:
// [the last rate below c, the first at or above it]. The levels past c are marked
// unsustainable (points on the plateau, above capacity). Output tokens per request falling
// past the onset (a server that shortens its answers) is quoted as supporting evidence. It
// reports false, changing nothing, when the hinge is not accepted.
func (r *rater) plateauCapacity() bool {
	var x, y []float64
	for _, p := range r.pts {
		if finite(p.tps) {
			x, y = append(x, float64(p.lv.OfferedRPS)), append(y, p.tps)
		}
	}
	h, err := fitHinge(x, y)
	if err != nil {
		return false
	}
	c := float64(h.Breakpoint)
	var below, above, first, last int = 0, 0, -1, -1
	for i, v := range x {
		switch {
		case v < c/(1+RefineTolerance):
			below++
		case v > c*(1+RefineTolerance):
			if first < 0 {
				first = i
			}
			above, last = above+1, i
		}
	}
	if !(h.Slope > 0) || rankR2(h.R2) < sharpMinR2 || below < minRiseLevels || above < 2 ||
		!(perDoubling(x[first], y[first], x[last], y[last]) < r.opts.KneeGain) {
		return false
	}
	lo, hi := x[0], x[len(x)-1]
	for _, v := range x {
		if v < c {
			lo = v
		} else {
			hi = v
			break
		}
	}
	rr := r.rr
	rr.CapacityRule, rr.CapacityRPS, rr.CapacityTPS = CapacityRulePlateau, Float(c), h.PlateauTPS
	rr.CapacityInterval, rr.CapacityBracket = [2]Float{Float(lo), Float(hi)}, []Float{Float(lo), Float(hi)}
	var past []string
	for _, p := range r.pts {
		if float64(p.lv.OfferedRPS) > c && p.lv.Sustainable {
			p.lv.Sustainable = false
			p.lv.Notes = append(p.lv.Notes, fmt.Sprintf("unsustainable: on the plateau of output TPS past the capacity %s requests/s (%s); kept as a point above capacity",
				Float(c).Format(), plateauRuleName))
			past = append(past, p.lv.OfferedRPS.Format())
		}
	}
	rr.CapacityReason = fmt.Sprintf("%s: the hinge y = a + b·min(x, c) fits the output TPS with R² %s, rising %s tokens/s per request/s to a plateau of %s tokens/s from c = %s requests/s, with %d levels on the rise and %d on the plateau (growing %.0f%% per doubling); 95%% interval the plateau's onset, between the last rate on the rise, %s, and the first on the plateau, %s%s",
		plateauRuleName, fmtR2(h.R2), h.Slope.Format(), h.PlateauTPS.Format(), Float(c).Format(), below, above,
		100*math.Max(perDoubling(x[first], y[first], x[last], y[last]), 0), Float(lo).Format(), Float(hi).Format(), r.tokensEvidence(c))
	r.warn(ratePlateauCapacity(c, past))
	return true
}

// tokensEvidence quotes the output tokens per request (mean_output_tokens) below and past
// the plateau's onset c where the table gives them: falling past it, the server shortened
// its answers to hold the rate, evidence of the overload the plateau shows.
func (r *rater) tokensEvidence(c float64) string {
	var rise, past []float64
	for _, p := range r.pts {
		if n := float64(p.lv.MeanOutputTokens); finite(n) && n > 0 {
			if float64(p.lv.OfferedRPS) < c {
				rise = append(rise, n)
			} else {
				past = append(past, n)
			}
		}
	}
	if len(rise) == 0 || len(past) == 0 {
		return ""
	}
	before, end := mean(rise), past[len(past)-1]
	if end < (1-maxRateDeficit)*before {
		return fmt.Sprintf("; supporting it, the output tokens per request fall from %s below the onset to %s at the largest rate (%.0f%% fewer): the server shortened its answers past capacity",
			Float(before).Format(), Float(end).Format(), 100*(1-end/before))
	}
	parts := make([]string, len(past))
	for i, n := range past {
		parts[i] = Float(n).Format()
	}
	return fmt.Sprintf("; the output tokens per request hold (%s below the onset, %s past it)", Float(before).Format(), strings.Join(parts, ", "))
}
