package analysis

import (
	"fmt"

	"github.com/kneecap/kneecap/record"
)

// Refiner chooses the levels a sweep adds after its planned ones (sweep.refine), on either load
// axis; it implements sweep.Refiner. It summarizes and analyzes every level so far as the
// run's analysis will (without bootstrap intervals, which move no answer) and asks Refinement
// where an answer — the SLO limit, the knee or the capacity, the TTFT blow-up — lies farthest
// from a measured level.
type Refiner struct {
	opts  Options
	rules StopRules
}

// NewRefiner returns the refiner of a sweep analyzed with opts and stopped by rules.
func NewRefiner(opts Options, rules record.StopRules) Refiner {
	opts.Bootstrap = 0
	return Refiner{opts: opts, rules: StopRules{Rules: rules}}
}

// Refine returns the x of the next level to add — a concurrency on a closed loop, an offered
// rate in requests/s on an open loop (Refinement) — and why, or 0 and "" when every answer
// lies close enough to a level run; it implements sweep.Refiner. An added level that broke
// the error-rate or stop_ttft rule stops the adding (0 and the reason): the server changed,
// or broke, since the planned levels, and more load would only repeat the failure.
func (r Refiner) Refine(levels []record.Level) (float64, string) {
	if why := r.addedBreach(levels); why != "" {
		return 0, why
	}
	attempted := make([]float64, len(levels))
	for i := range levels {
		run := &levels[i].Run
		attempted[i] = float64(run.Concurrency)
		if run.Mode().IsRate() {
			attempted[i] = run.OfferedRPS
		}
	}
	res := Analyze(Summarize(levels, r.opts), Meta{}, r.opts)
	return Refinement(&res, attempted)
}

// addedBreach returns why adding must stop when the last level is an added one, or a retry run
// after the planned levels, that broke the error-rate or stop_ttft rule, else "".
func (r Refiner) addedBreach(levels []record.Level) string {
	if n := len(levels) - 1; n >= 0 && (levels[n].Run.Refine != "" || levels[n].Run.RetryOf != nil) && !levels[n].Run.Interrupted {
		lv := Summarize(levels[n:], DefaultOptions())[0]
		if b := r.rules.breach(&lv); b.rule != "" {
			return fmt.Sprintf("added level %s had %s %s, above %s", levelName(&lv), b.what, b.value, b.rule)
		}
	}
	return ""
}
