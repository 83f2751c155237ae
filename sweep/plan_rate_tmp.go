package sweep

// TEMPORARY (helper B, issue 14): the shared API contract's types that helper A defines in
// sweep/arrival.go, sweep/levels.go and sweep/sink.go, written here in an identical form so
// config and cmd compile against them before A's runner lands. The lead deletes this file when
// merging A's branch (the YAML methods of RatesSpec live in ratesyaml.go, which stays).

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ArrivalProcess is the arrival process of a rate sweep.
type ArrivalProcess string

// The arrival processes.
const (
	ArrivalPoisson  ArrivalProcess = "poisson"  // exponential gaps (the default, "")
	ArrivalGamma    ArrivalProcess = "gamma"    // gamma gaps, shape = Burstiness, mean 1/rate (vLLM --burstiness)
	ArrivalConstant ArrivalProcess = "constant" // evenly spaced
)

// Arrival is the arrival process of a rate sweep.
type Arrival struct {
	Process    ArrivalProcess
	Burstiness float64 // gamma shape; 1 = Poisson; < 1 burstier; must be > 0 for gamma (0 means 1)
	Seed       uint64  // level i's gaps come from a PCG seeded (Seed, i): reproducible
}

// Validate checks the process and its burstiness.
func (a Arrival) Validate() error {
	switch a.Process {
	case "", ArrivalPoisson, ArrivalGamma, ArrivalConstant:
	default:
		return fmt.Errorf("arrival %q: must be poisson, gamma or constant", a.Process)
	}
	if !(a.Burstiness >= 0) || math.IsInf(a.Burstiness, 0) {
		return fmt.Errorf("burstiness is %g: must be > 0", a.Burstiness)
	}
	return nil
}

// Gaps returns level index's arrival gap generator at rate requests/s (TEMPORARY: constant
// gaps only; helper A's arrival.go draws them from the process).
func (a Arrival) Gaps(rate float64, index int) func() time.Duration {
	gap := time.Duration(float64(time.Second) / rate)
	return func() time.Duration { return gap }
}

// DefaultMaxConcurrency caps the requests in flight at a rate level when MaxConcurrency is 0.
const DefaultMaxConcurrency = 4096

// RateRefiner chooses the rate levels added after the planned ones.
type RateRefiner interface {
	// RefineRate returns the offered rate (requests/s) of the next level to add and why, or
	// 0 and a reason ("" when every answer is close enough) to stop adding.
	RefineRate(levels []Level) (rps float64, why string)
}

// RatesSpec is the rate levels spec, like LevelsSpec (list, or start/max/factor|step).
type RatesSpec struct {
	List                     []float64
	Start, Max, Factor, Step float64
	Auto                     bool // "auto": planned from a probe's max QPS (see PlanRates)
}

// Rates returns the offered rates of the spec, increasing; an error for Auto.
func (s RatesSpec) Rates() ([]float64, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Auto {
		return nil, errors.New("auto: the rates are planned from a measured maximum QPS (PlanRates)")
	}
	if len(s.List) > 0 {
		return append([]float64(nil), s.List...), nil
	}
	var out []float64
	for k := 0; ; k++ {
		v := s.Start + float64(k)*s.Step
		if s.Step == 0 {
			v = s.Start * math.Pow(s.Factor, float64(k))
		}
		if v > s.Max*(1+1e-9) {
			break
		}
		out = append(out, round3(v))
	}
	if last := out[len(out)-1]; last < s.Max*(1-1e-9) {
		out = append(out, s.Max)
	}
	return out, nil
}

// Validate checks the spec.
func (s RatesSpec) Validate() error {
	ok := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	switch {
	case s.Auto:
		if len(s.List) > 0 || s.Start != 0 || s.Max != 0 || s.Factor != 0 || s.Step != 0 {
			return errors.New("give auto, a list or a progression, not several")
		}
		return nil
	case len(s.List) > 0:
		if s.Start != 0 || s.Max != 0 || s.Factor != 0 || s.Step != 0 {
			return errors.New("give a list or a progression, not both")
		}
		if len(s.List) > maxLevels {
			return fmt.Errorf("more than %d rates", maxLevels)
		}
		for i, v := range s.List {
			if !ok(v) {
				return fmt.Errorf("rate %d is %g: must be > 0 requests/s", i+1, v)
			}
			if i > 0 && v <= s.List[i-1] {
				return fmt.Errorf("rates must increase: %g follows %g", v, s.List[i-1])
			}
		}
		return nil
	case s.Start == 0 && s.Max == 0 && s.Factor == 0 && s.Step == 0:
		return errors.New("no rates: give a list such as [1, 2, 4], {start, max, factor} or auto")
	case !ok(s.Start):
		return fmt.Errorf("start is %g: must be > 0 requests/s", s.Start)
	case !(s.Max >= s.Start) || math.IsInf(s.Max, 0):
		return fmt.Errorf("max %g is below start %g", s.Max, s.Start)
	case s.Factor != 0 && s.Step != 0:
		return errors.New("give factor (geometric) or step (linear), not both")
	case s.Step < 0 || math.IsNaN(s.Step) || math.IsInf(s.Step, 0):
		return fmt.Errorf("step is %g: must be > 0", s.Step)
	case s.Step == 0 && (!(s.Factor > 1) || math.IsInf(s.Factor, 0)):
		return fmt.Errorf("factor is %g: must be > 1 (or give step for a linear progression)", s.Factor)
	}
	n := 1 + (s.Max-s.Start)/s.Step
	if s.Step == 0 {
		n = 1 + math.Log(s.Max/s.Start)/math.Log(s.Factor)
	}
	if n > maxLevels {
		return fmt.Errorf("more than %d rates: raise factor or step, or lower max", maxLevels)
	}
	return nil
}

// PlanRates returns the auto rates around a measured maximum QPS maxQPS:
// 0.1, 0.25, 0.5, 0.7, 0.85, 1.0, 1.15, 1.3 × maxQPS (rounded to 3 significant figures).
func PlanRates(maxQPS float64) []float64 {
	fs := []float64{0.1, 0.25, 0.5, 0.7, 0.85, 1.0, 1.15, 1.3}
	out := make([]float64, len(fs))
	for i, f := range fs {
		out[i] = round3(f * maxQPS)
	}
	return out
}

// round3 rounds v to 3 significant figures.
func round3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}
