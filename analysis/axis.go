package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/kneecap/kneecap/record"
)

// Axis is a run's load axis (DESIGN §4.15): what its levels vary, where each level sits on it
// and how the answers name a place on it. A closed loop's axis is concurrency (requests in
// flight); an open loop's is the arrival rate in requests/s, a trace replay's too (each of its
// levels replays the trace at a time scale, and sits at the rate it realised). The analysis
// summarises, fits and answers on it; the reports, charts and tables label it.
type Axis struct{ rate bool }

// AxisOf returns the axis of a run of mode m.
func AxisOf(m record.Mode) Axis { return Axis{rate: m.IsRate()} }

// Axis returns the run's load axis.
func (r *Result) Axis() Axis { return AxisOf(r.Mode) }

// IsRate reports whether the axis is the arrival rate (an open loop).
func (a Axis) IsRate() bool { return a.rate }

// Setting returns what l was asked to run at, the order of analysis.json's levels: its
// concurrency, or its offered rate (NaN on a level of the other mode).
func (a Axis) Setting(l *Level) float64 {
	if a.rate {
		return float64(l.Offered())
	}
	return float64(l.Concurrency)
}

// X returns where l sits on the axis, the x of the fits and the charts: its concurrency, or
// its arrival rate (Level.ArrivalRate: realised, else offered).
func (a Axis) X(l *Level) float64 {
	if a.rate {
		return float64(l.ArrivalRate())
	}
	return float64(l.Concurrency)
}

// Between returns the place a fraction t of the way from x0 to x1 on the axis: on log
// concurrency (the throughput and latency of a closed loop change by doublings), linearly in
// the rate on an open loop.
func (a Axis) Between(x0, x1, t float64) float64 {
	if a.rate {
		return x0 + t*(x1-x0)
	}
	return math.Exp(math.Log(x0) + t*(math.Log(x1)-math.Log(x0)))
}

// Frac returns where x lies between x0 and x1 on the axis, the inverse of Between: (log x −
// log x0) ÷ (log x1 − log x0) on a closed loop, (x − x0) ÷ (x1 − x0) on an open one.
func (a Axis) Frac(x0, x1, x float64) float64 {
	if a.rate {
		return (x - x0) / (x1 - x0)
	}
	return (math.Log(x) - math.Log(x0)) / (math.Log(x1) - math.Log(x0))
}

// At names the place x (formatted) on the axis as the answers do: "concurrency 8", "2.5
// requests/s".
func (a Axis) At(x string) string {
	if a.rate {
		return x + " requests/s"
	}
	return "concurrency " + x
}

// Per names one step along the axis, for the slopes the answers state ("ms per added
// request"): "request" (one more in flight), "request/s".
func (a Axis) Per() string {
	if a.rate {
		return "request/s"
	}
	return "request"
}

// IsRate reports whether l is an arrival-rate level (it carries RateLevel).
func (l *Level) IsRate() bool { return l.RateLevel != nil }

// Offered returns the level's offered rate in requests/s, or NaN on a closed-loop level.
func (l *Level) Offered() Float {
	if l.RateLevel == nil {
		return NaN()
	}
	return l.OfferedRPS
}

// ArrivalRate returns the level's place on the rate axis in requests/s: its realised rate
// where measured, else its offered rate (a table without realized_rps); NaN on a closed-loop
// level.
func (l *Level) ArrivalRate() Float {
	if l.RateLevel == nil {
		return NaN()
	}
	if r := l.RealizedRPS; r.OK() && r > 0 {
		return r
	}
	return l.OfferedRPS
}

// ModeOf returns the mode of levels: record.ModeRate when some level is an arrival-rate level, else
// record.ModeConcurrency.
func ModeOf(levels []Level) record.Mode {
	for i := range levels {
		if levels[i].IsRate() {
			return record.ModeRate
		}
	}
	return record.ModeConcurrency
}

// SortLevels sorts levels in place the way analysis.json lists them: by offered rate on an
// arrival-rate run, by concurrency otherwise (stable: levels that tie keep their order).
func SortLevels(levels []Level) {
	ax := AxisOf(ModeOf(levels))
	slices.SortStableFunc(levels, func(p, q Level) int { return cmp.Compare(ax.Setting(&p), ax.Setting(&q)) })
}

// SameMode returns an error when runs (labelled labels) are not all of one mode, naming the
// first run of another mode than the first run's: a closed-loop and an arrival-rate sweep
// answer on different axes (concurrency, requests/s) and are not compared. A run without a
// mode (an analysis.json from before the key) is closed loop.
func SameMode(runs []*Result, labels []string) error {
	if len(runs) == 0 || runs[0] == nil {
		return nil
	}
	first := runs[0].Mode.Of()
	for i, r := range runs[1:] {
		if r == nil || r.Mode.Of() == first || i+1 >= len(labels) {
			continue
		}
		an := func(m record.Mode) string {
			if m.IsRate() {
				return "an " + m.Label()
			}
			return "a " + m.Label()
		}
		return fmt.Errorf("runs of different modes: %s is %s (mode %s), %s %s (mode %s); compare runs of one mode",
			labels[0], an(first), first, labels[i+1], an(r.Mode.Of()), r.Mode.Of())
	}
	return nil
}

// Comparable returns an error when runs cannot be compared side by side: labels do not
// label them one each, a run is nil, they are not all of one mode (SameMode) or not all
// measured by one yardstick (SameYardstick).
func Comparable(runs []*Result, labels []string) error {
	if len(labels) != len(runs) {
		return fmt.Errorf("%d labels for %d runs", len(labels), len(runs))
	}
	for i, r := range runs {
		if r == nil {
			return fmt.Errorf("run %q is nil", labels[i])
		}
	}
	if err := SameMode(runs, labels); err != nil {
		return err
	}
	return SameYardstick(runs, labels)
}
