package sweep

import (
	"errors"
	"fmt"

	"strconv"

	"github.com/kneecap/kneecap/selfcheck"
)

// The plan of an arrival-rate sweep (Plan.Rates, DESIGN §3.9).

// planLen is the number of planned levels: of Rates on a rate sweep, else of Levels.
func (p *Plan) planLen() int {
	if len(p.Rates) > 0 {
		return len(p.Rates)
	}
	return len(p.Levels)
}

// levelAt returns planned level i's concurrency (a rate level's cap) and offered rate (0 on a
// concurrency sweep).
func (p *Plan) levelAt(i int) (c int, rps float64) {
	if len(p.Rates) > 0 {
		return p.rateCap(), p.Rates[i]
	}
	return p.Levels[i], 0
}

// rateCap is the cap on a rate level's requests in flight: MaxConcurrency or its default
// (inFlightCap, as Protocol.InFlightCap).
func (p *Plan) rateCap() int { return inFlightCap(p.MaxConcurrency) }

// validateRates reports the problems of a rate sweep's settings: rates within [MinRate,
// MaxRate], the arrival process, the cap within [0, MaxProcessWorkers], and no Schedule
// (sharding a rate sweep is not supported yet: Validate refuses it).
func (p *Plan) validateRates() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, v := range p.Rates {
		if why := rateProblem(v); why != "" {
			bad("level %d: rate %v %s", i, v, why)
		}
	}
	if p.MaxConcurrency < 0 || p.MaxConcurrency > selfcheck.MaxProcessWorkers {
		bad("max_concurrency %d outside [0, %d]", p.MaxConcurrency, selfcheck.MaxProcessWorkers)
	}
	if len(p.Rates) == 0 {
		if p.Trace != nil {
			errs = append(errs, errors.New("trace: a trace replay is a rate sweep: it needs Rates (its time scales × the trace's mean rate)"))
		}
		return errs // Arrival is not used on a concurrency sweep
	}
	if err := p.Arrival.Validate(); err != nil {
		errs = append(errs, err)
	}
	if p.Schedule != nil {
		errs = append(errs, errors.New("schedule: a rate sweep cannot be sharded (run it from one process)"))
	}
	return errs
}

// levelName names a level in messages: "concurrency 8", or "2.5 requests/s" (rps > 0).
func levelName(c int, rps float64) string {
	if rps > 0 {
		return strconv.FormatFloat(rps, 'g', -1, 64) + " requests/s"
	}
	return "concurrency " + strconv.Itoa(c)
}
