package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// rateFlags are the flags of an arrival-rate (open-loop) sweep.
type rateFlags struct {
	mode, rates, from, arrival string
	burstiness                 float64
	maxConcurrency             int
}

// rateFlagNames are the flags of rateFlags, which --resume refuses like the other
// configuration flags.
var rateFlagNames = []string{"mode", "rates", "from", "arrival", "burstiness", "max-concurrency"}

// define defines the rate flags on fs.
func (r *rateFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&r.mode, "mode", "", "`mode`: concurrency (closed loop, levels of clients) or rate (open loop, offered requests/s) (sweep.mode; default concurrency)")
	fs.StringVar(&r.rates, "rates", "", "offered rates in requests/s, a `list` such as 1,2,4,8, or auto (a short closed-loop probe plans them); implies --mode rate (sweep.rates)")
	fs.StringVar(&r.from, "from", "", "with --rates auto: plan the rates from the max QPS of the closed-loop results `DIR` instead of probing")
	fs.StringVar(&r.arrival, "arrival", "", "arrival `process` of a rate sweep: poisson, gamma or constant (sweep.arrival; default poisson)")
	fs.Float64Var(&r.burstiness, "burstiness", 0, "gamma arrivals' shape `b`: 1 = Poisson, < 1 burstier (sweep.burstiness; default 1)")
	fs.IntVar(&r.maxConcurrency, "max-concurrency", 0, fmt.Sprintf("most requests in flight at a rate level, `N`; later arrivals wait client-side (sweep.max_concurrency; default %d)", sweep.DefaultMaxConcurrency))
}

// applyRateFlags sets the rate flags given (set) over cfg; a value that does not parse is
// returned, for the caller to report with the configuration's problems.
func applyRateFlags(cfg *config.Config, r *rateFlags, set map[string]bool) error {
	var err error
	s := &cfg.Sweep
	if set["rates"] {
		if spec, perr := parseRates(r.rates); perr != nil {
			err = fmt.Errorf("--rates: %w", perr)
		} else {
			s.Rates = spec
			cfg.Override("sweep.rates", "--rates")
			if !set["mode"] {
				s.Mode = record.ModeRate
				cfg.Override("sweep.mode", "--rates")
			}
		}
	}
	if set["mode"] {
		s.Mode = record.Mode(r.mode)
		cfg.Override("sweep.mode", "--mode")
	}
	if !s.RateMode() { // rateFlagConflicts refuses the rate flags
		return errors.Join(err, rateFlagConflicts(s, set))
	}
	if set["arrival"] {
		s.Arrival = sweep.ArrivalProcess(r.arrival)
		cfg.Override("sweep.arrival", "--arrival")
	}
	if set["burstiness"] {
		s.Burstiness = r.burstiness
		cfg.Override("sweep.burstiness", "--burstiness")
	}
	if set["max-concurrency"] {
		s.MaxConcurrency = r.maxConcurrency
		cfg.Override("sweep.max_concurrency", "--max-concurrency")
	}
	return errors.Join(err, rateFlagConflicts(s, set))
}

// rateFlagConflicts reports the flags given that the sweep's mode would ignore: --levels on a
// rate sweep, a rate sweep's flags on a concurrency sweep, --from without --rates auto. (A
// saved config.yaml has levels whatever its mode: only flags conflict.)
func rateFlagConflicts(s *sweep.Protocol, set map[string]bool) error {
	var errs []error
	if set["levels"] && s.RateMode() {
		errs = append(errs, errors.New("--levels: a rate sweep offers --rates, not levels of concurrency: give one of them"))
	}
	for _, name := range []string{"arrival", "burstiness", "max-concurrency"} {
		if set[name] && !s.RateMode() {
			errs = append(errs, fmt.Errorf("--%s: only an arrival-rate sweep (--rates or --mode rate) takes it", name))
		}
	}
	if set["from"] && !(s.RateMode() && s.Rates.Auto) {
		errs = append(errs, errors.New("--from: plans the rates of --rates auto: give --rates auto with it"))
	}
	return errors.Join(errs...)
}

// parseRates parses --rates: "auto" or a list of requests/s such as "0.5,1,2".
func parseRates(v string) (sweep.RatesSpec, error) {
	if strings.TrimSpace(v) == "auto" {
		return sweep.RatesSpec{Auto: true}, nil
	}
	var list []float64
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return sweep.RatesSpec{}, fmt.Errorf("%q is not a rate in requests/s (want a list such as 1,2,4 or auto)", f)
		}
		list = append(list, x)
	}
	if len(list) == 0 {
		return sweep.RatesSpec{}, errors.New("empty list (want a list such as 1,2,4 or auto)")
	}
	return sweep.RatesSpec{List: list}, nil
}

// planRates returns the streams a rate sweep's levels need (its cap on requests in flight)
// and sets its rates: given, read back from probe.json on --resume of --rates auto, read
// from --from DIR, or left nil for the probe (autoRates) once the target is up.
func (s *sweepPrep) planRates() ([]int, error) {
	sw := s.cfg.Sweep
	if s.cfg.Workload.Trace.Enabled() {
		return s.planTrace()
	}
	levels := []int{sw.InFlightCap()}
	switch {
	case !sw.Rates.Auto:
		rates, err := sw.Rates.Rates()
		s.rates = rates
		return levels, err
	case s.done != nil:
		p, err := readProbe(s.done.Dir)
		switch {
		case err != nil:
			return nil, err
		case p == nil && len(s.done.Levels) > 0:
			return nil, usageError("sweep: --resume %s: its rates were planned by --rates auto, and it has levels but no %s: run it again without --resume", s.done.Dir, ProbeFile)
		case p != nil:
			s.rates = p.Rates
		} // else the probe did not finish: autoRates runs it again
	case s.from != "":
		_, nominal := s.cfg.Workload.NominalLengths()
		p, err := probeFrom(s.from, s.cfg.AnalysisOptions(), nominal)
		if err != nil {
			return nil, err
		}
		s.probe, s.rates = p, p.Rates
	}
	return levels, nil
}

// autoRates runs the --rates auto probe when the rates are not known yet, and writes
// probe.json when they were planned in this run.
func (s *sweepPrep) autoRates(ctx context.Context, e *env, t *target) error {
	if !s.cfg.Sweep.RateMode() {
		return nil
	}
	if s.rates == nil {
		if s.done != nil {
			fmt.Fprintf(e.stderr, "kneecap: --resume: %s has no %s (its probe did not finish): probing again\n", s.done.Dir, ProbeFile)
		}
		p, err := s.runProbe(ctx, e, t)
		if err != nil {
			return err
		}
		s.probe, s.rates = p, p.Rates
	}
	if s.probe == nil {
		return nil
	}
	return s.writeProbe(e, s.probe)
}

// ratePlan makes plan a rate sweep: its rates, arrival process, cap and refiner.
func (s *sweepPrep) ratePlan(plan *sweep.Plan, prog *progress) {
	cfg := s.cfg
	plan.Levels = nil
	plan.Rates = s.rates
	plan.Arrival = cfg.Sweep.ArrivalOf(cfg.Workload.Seed)
	plan.MaxConcurrency = cfg.Sweep.MaxConcurrency
	plan.Trace = s.trace
	if b := cfg.Sweep.Stop.Budget; b > 0 { // the probe spent part of it
		plan.Protocol.Stop.Budget = max(b-s.probeElapsed, time.Nanosecond)
	}
	if cfg.Sweep.Refine > 0 {
		plan.Refiner = announcingRefiner{analysis.NewRefiner(cfg.AnalysisOptions(), cfg.Sweep.Stop), prog}
		plan.Refine = cfg.Sweep.Refine
	}
}

// planned returns the planned levels: the rates of a rate sweep, else the concurrencies.
func (s *sweepPrep) planned() []float64 {
	if s.cfg.Sweep.RateMode() {
		return s.rates
	}
	out := make([]float64, len(s.levels))
	for i, c := range s.levels {
		out[i] = float64(c)
	}
	return out
}

// levelName names planned level i: "concurrency 8", "12.5 requests/s".
func (s *sweepPrep) levelName(i int) string {
	if s.cfg.Sweep.RateMode() {
		return strconv.FormatFloat(s.rates[i], 'g', -1, 64) + " requests/s"
	}
	return "concurrency " + strconv.Itoa(s.levels[i])
}
