package sweep

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// gapStats draws n gaps and returns their mean and coefficient of variation, in seconds.
func gapStats(next func() time.Duration, n int) (mean, cv float64) {
	var s, s2 float64
	for range n {
		g := next().Seconds()
		s += g
		s2 += g * g
	}
	mean = s / float64(n)
	sd := math.Sqrt(s2/float64(n) - mean*mean)
	return mean, sd / mean
}

// TestArrivalGaps: each process's mean gap is 1/rate within 3 standard errors over 100,000
// draws (the standard error of the mean is CV/rate/√n; CV = 1/√b for gamma of shape b, 1 for
// Poisson), the CV is 1/√b within 3% (its sampling error is below 1% at n = 100,000), and a
// constant process is exact.
func TestArrivalGaps(t *testing.T) {
	const n, rate = 100_000, 250.0
	for _, c := range []struct {
		a  Arrival
		cv float64
	}{
		{Arrival{Seed: 1}, 1},
		{Arrival{Process: ArrivalPoisson, Seed: 2}, 1},
		{Arrival{Process: ArrivalGamma, Seed: 3}, 1}, // burstiness 0 means 1
		{Arrival{Process: ArrivalGamma, Burstiness: 0.25, Seed: 4}, 2},
		{Arrival{Process: ArrivalGamma, Burstiness: 0.5, Seed: 5}, 1 / math.Sqrt(0.5)},
		{Arrival{Process: ArrivalGamma, Burstiness: 4, Seed: 6}, 0.5},
	} {
		mean, cv := gapStats(c.a.Gaps(rate, 0), n)
		se := c.cv / rate / math.Sqrt(n)
		if math.Abs(mean-1/rate) > 3*se {
			t.Errorf("%+v: mean gap %.6g s, want %.6g ± %.2g", c.a, mean, 1/rate, 3*se)
		}
		if math.Abs(cv-c.cv) > 0.03*c.cv {
			t.Errorf("%+v: CV %.4f, want %.4f ± 3%%", c.a, cv, c.cv)
		}
	}
	next := Arrival{Process: ArrivalConstant}.Gaps(3, 0) // 1/3 s: the gaps round, their sum does not drift
	var sum time.Duration
	for k := 1; k <= 3000; k++ {
		sum += next()
		if want := time.Duration(math.Round(float64(k) * 1e9 / 3)); sum != want {
			t.Fatalf("constant: arrival %d at %v, want %v", k, sum, want)
		}
	}
}

// TestArrivalSeeds: the same seed and level give the same gaps; another level or seed others.
func TestArrivalSeeds(t *testing.T) {
	draw := func(a Arrival, index int) []time.Duration {
		next := a.Gaps(10, index)
		out := make([]time.Duration, 100)
		for i := range out {
			out[i] = next()
		}
		return out
	}
	for _, p := range []ArrivalProcess{ArrivalPoisson, ArrivalGamma} {
		a := Arrival{Process: p, Burstiness: 0.7, Seed: 42}
		if p == ArrivalPoisson {
			a.Burstiness = 0
		}
		if !slices.Equal(draw(a, 3), draw(a, 3)) {
			t.Errorf("%s: same seed and level, different gaps", p)
		}
		if slices.Equal(draw(a, 3), draw(a, 4)) {
			t.Errorf("%s: levels 3 and 4 have the same gaps", p)
		}
		b := a
		b.Seed++
		if slices.Equal(draw(a, 3), draw(b, 3)) {
			t.Errorf("%s: seeds 42 and 43 have the same gaps", p)
		}
	}
}

func TestArrivalValidate(t *testing.T) {
	for _, c := range []struct {
		a   Arrival
		bad string
	}{
		{Arrival{}, ""},
		{Arrival{Process: ArrivalGamma, Burstiness: 0.5}, ""},
		{Arrival{Process: "pareto"}, `unknown process "pareto"`},
		{Arrival{Process: ArrivalGamma, Burstiness: -1}, "must be > 0"},
		{Arrival{Process: ArrivalGamma, Burstiness: math.Inf(1)}, "must be > 0"},
		{Arrival{Process: ArrivalConstant, Burstiness: 2}, "only for the gamma process"},
	} {
		err := c.a.Validate()
		if (err == nil) != (c.bad == "") || err != nil && !contains(err.Error(), c.bad) {
			t.Errorf("%+v: error %v, want %q", c.a, err, c.bad)
		}
	}
}

func TestRatesSpec(t *testing.T) {
	for _, c := range []struct {
		s    RatesSpec
		want []float64
		bad  string
	}{
		{s: RatesSpec{List: []float64{0.5, 1, 2.5}}, want: []float64{0.5, 1, 2.5}},
		{s: RatesSpec{Start: 1, Max: 10, Factor: 2}, want: []float64{1, 2, 4, 8, 10}},
		{s: RatesSpec{Start: 0.5, Max: 2, Step: 0.5}, want: []float64{0.5, 1, 1.5, 2}},
		{s: RatesSpec{Start: 0.1, Max: 0.3, Step: 0.1}, want: []float64{0.1, 0.2, 0.3}}, // 0.1 + 2 × 0.1 lands on max within rounding,
		{s: RatesSpec{List: []float64{1, 1}}, bad: "must increase"},
		{s: RatesSpec{List: []float64{0}}, bad: "must be > 0"},
		{s: RatesSpec{List: []float64{math.Inf(1)}}, bad: "must be > 0"},
		{s: RatesSpec{Start: 2, Max: 1, Factor: 2}, bad: "below start"},
		{s: RatesSpec{Start: 1, Max: 4, Factor: 1}, bad: "must be > 1"},
		{s: RatesSpec{Start: 1, Max: 1e5, Step: 1e-3}, bad: "more than 100 rates"},
		// Rates outside [MinRate, MaxRate]: a gap of 1e-9 requests/s overflows time.Duration.
		{s: RatesSpec{List: []float64{1e-9, 1}}, bad: "rate 1 is 1e-09: must be within [0.001, 100000] requests/s"},
		{s: RatesSpec{List: []float64{1, 2e5}}, bad: "rate 2 is 200000: must be within [0.001, 100000]"},
		{s: RatesSpec{Start: 1e-4, Max: 1, Factor: 2}, bad: "start is 0.0001: must be within"},
		{s: RatesSpec{Start: 1, Max: 1e6, Factor: 2}, bad: "max is 1e+06: must be within"},
		{s: RatesSpec{Auto: true}, bad: "PlanRates"},
		{s: RatesSpec{}, bad: "no rates"},
	} {
		got, err := c.s.Rates()
		if (err == nil) != (c.bad == "") || err != nil && !contains(err.Error(), c.bad) {
			t.Errorf("%+v: error %v, want %q", c.s, err, c.bad)
			continue
		}
		if c.bad == "" && !slices.Equal(got, c.want) {
			t.Errorf("%+v: rates %v, want %v", c.s, got, c.want)
		}
	}
	if err := (RatesSpec{Auto: true}).Validate(); err != nil {
		t.Errorf("auto: %v", err)
	}
	if err := (RatesSpec{Auto: true, List: []float64{1}}).Validate(); err == nil {
		t.Error("auto with a list: no error")
	}
	// The factors of the brief: 0.1 … 1.3 × max QPS, 3 significant figures (0.25 × 12.34 = 3.085 is 3.08499… in binary).
	if got, want := PlanRates(12.34), []float64{1.23, 3.08, 6.17, 8.64, 10.5, 12.3, 14.2, 16}; !slices.Equal(got, want) {
		t.Errorf("PlanRates(12.34) = %v, want %v", got, want)
	}
	if PlanRates(0) != nil || PlanRates(math.NaN()) != nil {
		t.Error("PlanRates of no max QPS is not nil")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
