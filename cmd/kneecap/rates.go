package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

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
	list, err := config.ParseList(v, "1,2,4 or auto", func(f string) (float64, error) {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%q is not a rate in requests/s (want a list such as 1,2,4 or auto)", f)
		}
		return x, nil
	})
	return sweep.RatesSpec{List: list}, err
}
