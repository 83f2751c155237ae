package config

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/sweep"
)

// TestLoadRateSweep: the keys of an arrival-rate sweep decode into sweep.Protocol, each form
// of sweep.rates into its RatesSpec, and the defaults are Poisson arrivals, at most 4,096 in
// flight and a stop after 2 unsustainable levels.
func TestLoadRateSweep(t *testing.T) {
	c, err := Load(writeConfig(t, "sweep: {mode: rate, rates: [0.5, 1, 2.5]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sweep
	if !s.RateMode() || !reflect.DeepEqual(s.Rates.List, []float64{0.5, 1, 2.5}) || s.InFlightCap() != 4096 || s.Stop.MaxUnsustainable != 2 {
		t.Errorf("sweep = %+v", s)
	}
	if a := s.ArrivalOf(c.Workload.Seed); a.Process != "" || a.Seed != 1 {
		t.Errorf("arrival = %+v, want poisson with the workload's seed 1", a)
	}
	for _, tc := range []struct {
		yaml string
		want []float64
	}{
		{"sweep: {mode: rate, rates: {start: 1, max: 8, factor: 2}}", []float64{1, 2, 4, 8}},
		{"sweep: {mode: rate, rates: {start: 2, max: 7, step: 2.5}}", []float64{2, 4.5, 7}},
		{"sweep: {mode: rate, rates: {start: 1, max: 10, factor: 3}}", []float64{1, 3, 9, 10}},
	} {
		c, err := Load(writeConfig(t, tc.yaml))
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if got, err := c.Sweep.Rates.Rates(); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: Rates = %v, %v; want %v", tc.yaml, got, err, tc.want)
		}
	}
	c, err = Load(writeConfig(t, "workload: {seed: 7}\nsweep:\n  mode: rate\n  rates: auto\n  arrival: gamma\n  burstiness: 0.5\n  max_concurrency: 64\n  stop: {max_unsustainable: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s = c.Sweep
	if !s.Rates.Auto || s.InFlightCap() != 64 || s.Stop.MaxUnsustainable != 0 {
		t.Errorf("sweep = %+v", s)
	}
	if a := s.ArrivalOf(c.Workload.Seed); a != (sweep.Arrival{Process: sweep.ArrivalGamma, Burstiness: 0.5, Seed: 7}) {
		t.Errorf("arrival = %+v", a)
	}
}

// TestRateConfigErrors: each bad value of a rate sweep's keys is one problem naming FILE:LINE
// and the key.
func TestRateConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"bad mode", "sweep:\n  mode: open\n", `:2: sweep.mode: "open": must be concurrency or rate`},
		{"rate without rates", "sweep:\n  mode: rate\n", ":2: sweep.rates: missing: a rate sweep needs its offered rates"},
		{"rates without mode", "sweep:\n  rates: [1, 2]\n", ":2: sweep.rates: [1, 2]: a concurrency sweep takes levels, not rates; set sweep.mode: rate"},
		{"rates in concurrency mode", "sweep:\n  mode: concurrency\n  rates: [1, 2]\n", ":3: sweep.rates: [1, 2]: a concurrency sweep takes levels"},
		{"zero rate", "sweep:\n  mode: rate\n  rates: [0, 1]\n", ":3: sweep.rates: rate 1 is 0: must be > 0 requests/s"},
		{"decreasing rates", "sweep:\n  mode: rate\n  rates: [2, 1]\n", ":3: sweep.rates: rates must increase: 1 follows 2"},
		{"not a rate", "sweep:\n  mode: rate\n  rates: [1, fast]\n", `:3: sweep.rates: "fast" is not a rate in requests/s`},
		{"bad scalar", "sweep:\n  mode: rate\n  rates: automatic\n", `:3: sweep.rates: "automatic": want auto, a list`},
		{"unknown progression key", "sweep:\n  mode: rate\n  rates:\n    start: 1\n    top: 9\n", ":5: sweep.rates: field top not found"},
		{"progression factor", "sweep:\n  mode: rate\n  rates: {start: 1, max: 8, factor: 1}\n", ":3: sweep.rates: factor is 1: must be > 1"},
		{"progression start", "sweep:\n  mode: rate\n  rates: {start: 0, max: 8, step: 1}\n", ":3: sweep.rates: start is 0: must be > 0"},
		{"bad arrival", "sweep:\n  arrival: bursty\n", `:2: sweep.arrival: "bursty": must be poisson, gamma or constant`},
		{"burstiness without gamma", "sweep:\n  burstiness: 0.5\n", ":2: sweep.burstiness: is 0.5: only arrival gamma has a burstiness (arrival is poisson)"},
		{"negative burstiness", "sweep:\n  arrival: gamma\n  burstiness: -1\n", ":3: sweep.burstiness: is -1: must be > 0"},
		{"negative max concurrency", "sweep:\n  max_concurrency: -4\n", ":2: sweep.max_concurrency: is -4: must be ≥ 1"},
		{"negative max unsustainable", "sweep:\n  stop: {max_unsustainable: -1}\n", ":2: sweep.stop.max_unsustainable: is -1: must be ≥ 0"},
	} {
		t.Run(tc.name, func(t *testing.T) { oneProblem(t, tc.yaml, tc.want) })
	}
}

// TestRateConfigRoundTrip: a rate sweep's keys survive the results directory's config.yaml.
func TestRateConfigRoundTrip(t *testing.T) {
	for _, rates := range []string{"auto", "[1.5, 3]", "{start: 1, max: 8, factor: 2}"} {
		p := writeConfig(t, "sweep: {mode: rate, arrival: gamma, burstiness: 2, arrival_seed: 9, rates: "+rates+"}\n")
		c, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Load(writeConfig(t, string(out)))
		if err != nil {
			t.Fatalf("%s: reload: %v\n%s", rates, err, out)
		}
		if !reflect.DeepEqual(c2.Sweep, c.Sweep) {
			t.Errorf("%s: round trip\n%+v\nwant\n%+v", rates, c2.Sweep, c.Sweep)
		}
	}
}
