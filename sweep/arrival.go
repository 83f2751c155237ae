package sweep

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The arrival process of an arrival-rate (open-loop) level (DESIGN §3.9): the gaps between
// its scheduled arrival times.

// ArrivalProcess names the distribution of the gaps between arrivals.
type ArrivalProcess string

// Arrival processes.
const (
	// ArrivalPoisson: exponential gaps of mean 1/rate (the default, also for "").
	ArrivalPoisson ArrivalProcess = "poisson"
	// ArrivalGamma: gamma gaps of shape Burstiness and mean 1/rate (vLLM's --burstiness).
	ArrivalGamma ArrivalProcess = "gamma"
	// ArrivalConstant: evenly spaced arrivals, 1/rate apart.
	ArrivalConstant ArrivalProcess = "constant"
)

// DefaultMaxConcurrency is Plan.MaxConcurrency's default: the cap on a rate level's requests
// in flight.
const DefaultMaxConcurrency = 4096

// Arrival is the arrival process of a rate sweep.
type Arrival struct {
	// Process is the gaps' distribution ("" is ArrivalPoisson).
	Process ArrivalProcess
	// Burstiness is the gamma shape: 1 is Poisson, < 1 burstier, > 1 more regular. Only for
	// ArrivalGamma, where 0 means 1.
	Burstiness float64
	// Seed seeds the gaps: level i's come from a PCG seeded (Seed, i), so a rerun offers the
	// same schedule.
	Seed uint64
}

// Validate reports a process that is not known, or a burstiness that is negative, not
// finite, or set for a process other than gamma.
func (a Arrival) Validate() error {
	switch a.Process {
	case "", ArrivalPoisson, ArrivalConstant:
		if a.Burstiness != 0 {
			return fmt.Errorf("arrival: burstiness %v is only for the gamma process, not %s", a.Burstiness, a.process())
		}
	case ArrivalGamma:
		if a.Burstiness < 0 || math.IsNaN(a.Burstiness) || math.IsInf(a.Burstiness, 0) {
			return fmt.Errorf("arrival: burstiness %v must be > 0 (the gamma shape; 1 is Poisson)", a.Burstiness)
		}
	default:
		return fmt.Errorf("arrival: unknown process %q (poisson, gamma or constant)", a.Process)
	}
	return nil
}

// process is the process a names, "" being Poisson.
func (a Arrival) process() ArrivalProcess {
	if a.Process == "" {
		return ArrivalPoisson
	}
	return a.Process
}

// shape is the gamma shape of a gamma process (0 means 1).
func (a Arrival) shape() float64 {
	if a.Burstiness == 0 {
		return 1
	}
	return a.Burstiness
}

// Gaps returns level index's generator of arrival gaps at rate requests/s (rate > 0): each
// call returns the next gap. The sequence depends only on a, rate and index. A generator is
// not safe for concurrent use.
func (a Arrival) Gaps(rate float64, index int) func() time.Duration {
	mean := 1e9 / rate // ns
	rng := rand.New(rand.NewPCG(a.Seed, uint64(index)))
	switch a.process() {
	case ArrivalConstant:
		// Σ of rounded gaps would drift from k/rate: keep the exact sum and return its steps.
		var k, at int64
		return func() time.Duration {
			k++
			next := int64(math.Round(float64(k) * mean))
			d := next - at
			at = next
			return time.Duration(d)
		}
	case ArrivalGamma:
		shape := a.shape()
		scale := mean / shape
		return func() time.Duration { return time.Duration(gamma(rng, shape) * scale) }
	}
	return func() time.Duration { return time.Duration(rng.ExpFloat64() * mean) }
}

// gamma draws from the gamma distribution of shape k > 0 and scale 1 (Marsaglia and Tsang,
// "A simple method for generating gamma variables", ACM TOMS 26(3), 2000; for k < 1 the
// boost X·U^(1/k) of X ~ Gamma(k + 1), their §6).
func gamma(rng *rand.Rand, k float64) float64 {
	boost := 1.0
	if k < 1 {
		boost = math.Pow(rng.Float64(), 1/k)
		k++
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * boost
		}
	}
}
