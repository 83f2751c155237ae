package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// TraceResult is the answer of a trace replay (analysis.json's trace, DESIGN §4.15): a rate
// sweep whose level at time scale s offered s × the trace window's mean rate, read back as
// scales of the recorded traffic. Values not computed are null.
type TraceResult struct {
	// File, Format, Window, Requests and DurationS describe the trace replayed (from
	// levels.json; empty when the run did not record them).
	File      string `json:"file,omitempty"`
	Format    string `json:"format,omitempty"`
	Window    string `json:"window,omitempty"`
	Requests  int    `json:"requests,omitempty"`
	DurationS Float  `json:"duration_s"`
	// MeanRPS is the window's mean rate at scale 1, in requests/s: the recorded traffic.
	MeanRPS Float `json:"mean_rps"`
	// Scales are the time scales measured, ascending.
	Scales []Float `json:"scales"`
	// Basis is "slo" when an SLO is set (the answer is SLOScale), else "capacity" (the answer
	// is CapacityScale).
	Basis string `json:"basis"`
	// SLOScale is rate.slo_rps ÷ MeanRPS: the multiple of the recorded traffic the replica
	// carries within the SLO; SLOScaleBound is "at_least" when every measured scale met it.
	SLOScale      Float  `json:"slo_scale"`
	SLOScaleBound string `json:"slo_scale_bound,omitempty"`
	// CapacityScale is rate.capacity_rps ÷ MeanRPS: the multiple it sustains at all.
	CapacityScale Float `json:"capacity_scale"`
	// LargestScaleMeetingSLO is the largest measured scale whose level met the SLO (basis
	// slo: the largest of the valid levels before the first failing one, each sustainable and
	// every checked p95 within its threshold; it may exceed slo_scale when the capacity holds
	// slo_rps below it) or, basis capacity, was sustained at no more than the capacity.
	LargestScaleMeetingSLO Float `json:"largest_scale_meeting_slo"`
	// Answer is the sentence the reports print.
	Answer string `json:"answer"`
}

// trace reads the rate answers as time scales of a trace replay (DESIGN §4.15): scale_slo =
// slo_rps ÷ the window's mean rate, the largest measured scale that met the SLO, and the
// capacity's scale; with no SLO set the capacity's scale is the answer. It does nothing on a
// run that did not replay a trace (no Meta.Trace and no level with a time scale).
func (r *rater) trace() {
	mean := NaN()
	tr := &TraceResult{DurationS: NaN(), SLOScale: NaN(), CapacityScale: NaN(), LargestScaleMeetingSLO: NaN(), Basis: "capacity"}
	if m := r.res.Meta.Trace; m != nil {
		tr.File, tr.Format, tr.Window, tr.Requests = m.File, string(m.Format), m.Window, m.Requests
		tr.DurationS, mean = Float(m.DurationS), Float(m.MeanRPS)
	}
	for _, l := range r.res.Levels {
		if l.IsRate() && l.TimeScale > 0 {
			tr.Scales = append(tr.Scales, l.TimeScale)
			if !mean.OK() {
				mean = l.OfferedRPS / l.TimeScale
			}
		}
	}
	if !(mean > 0) {
		return
	}
	slices.Sort(tr.Scales)
	tr.MeanRPS = mean
	scaleOf := func(p point) float64 {
		if s := float64(p.lv.TimeScale); s > 0 {
			return s
		}
		return p.x / float64(mean)
	}
	tr.CapacityScale = r.rr.CapacityRPS / mean
	tr.SLOScale = r.rr.SLORPS / mean
	limit, pts := r.rr.CapacityRPS, r.pts
	if r.opts.SLO.Any() {
		tr.Basis, limit, pts = "slo", r.rr.SLORPS, r.pts[:r.passing]
		if r.passing == len(r.pts) && r.passing > 0 {
			tr.SLOScaleBound = "at_least"
		}
	}
	largest := 0.0
	for _, p := range pts {
		// Basis slo: every level before the first failing one passed (valid, sustainable,
		// within every threshold), whatever slo_rps, which the capacity may hold below a
		// passing level, says. Basis capacity: sustained at no more than the capacity — any
		// sustained level when every one was (the bound, the largest completion rate, may
		// lie a little below the largest rate sustained).
		atLeast := r.rr.CapacityBound == "at_least"
		if tr.Basis == "slo" || p.lv.Sustainable && (atLeast || limit.OK() && p.x <= float64(limit)*(1+1e-9)) {
			largest = math.Max(largest, scaleOf(p))
		}
	}
	if largest > 0 {
		tr.LargestScaleMeetingSLO = Float(largest)
	}
	tr.Answer = r.traceAnswer(tr)
	r.res.Trace = tr
}

// traceAnswer is the sentence of the trace answer: "This replica carries 2.6× the recorded
// traffic of trace F at the SLO (… requests/s; largest measured scale meeting it: 2×)."
func (r *rater) traceAnswer(tr *TraceResult) string {
	of := "the recorded traffic"
	if tr.File != "" {
		of += " of trace " + tr.File
	}
	largest := "none"
	if tr.LargestScaleMeetingSLO.OK() {
		largest = fscale(tr.LargestScaleMeetingSLO)
	}
	if tr.Basis == "capacity" {
		if !tr.CapacityScale.OK() {
			return fmt.Sprintf("No SLO is set and no capacity was found: no multiple of %s can be named (see warnings).", of)
		}
		at := ""
		if r.rr.CapacityBound == "at_least" {
			at = "at least "
		}
		return fmt.Sprintf("No SLO is set, so by its capacity: this replica sustains %s%s %s (%s requests/s; largest measured scale sustained: %s).",
			at, fscale(tr.CapacityScale), of, r.rr.CapacityRPS.Format(), largest)
	}
	switch {
	case !tr.SLOScale.OK() && len(r.pts) == 0:
		return fmt.Sprintf("No valid level to read a multiple of %s from (see warnings).", of)
	case !tr.SLOScale.OK():
		return fmt.Sprintf("No measured time scale of %s meets the SLO: even %s misses it (%s).",
			of, fscale(Float(r.pts[0].x/float64(tr.MeanRPS))), r.res.SLO.Limit)
	}
	at := ""
	if tr.SLOScaleBound == "at_least" {
		at = "at least "
	}
	t := fmt.Sprintf("This replica carries %s%s %s at the SLO (%s requests/s; largest measured scale meeting it: %s)",
		at, fscale(tr.SLOScale), of, r.rr.SLORPS.Format(), largest)
	if at != "" {
		t += ": every measured scale met it; replay larger ones to find the limit"
	}
	return t + "."
}

// fscale formats a time scale to 3 significant digits: "2.6×", "0.5×", "4×".
func fscale(s Float) string {
	return strconv.FormatFloat(float64(s), 'g', 3, 64) + "×"
}
