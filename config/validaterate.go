package config

import (
	"cmp"
	"math"
	"strings"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// mode checks sweep.mode and the keys of a rate sweep (sweep.rates, arrival, burstiness,
// max_concurrency, stop.max_unsustainable): a rate sweep needs rates (its levels are ignored),
// a concurrency sweep takes no rates.
func (v *validation) mode() {
	s := v.c.Sweep
	if v.trace() {
		return
	}
	switch s.Mode {
	case "", record.ModeConcurrency:
		if !s.Rates.IsZero() {
			v.badAt("sweep.rates", []string{"sweep.rates", "sweep.mode"}, "%s: a concurrency sweep takes levels, not rates; set sweep.mode: rate (or --mode rate) for an arrival-rate sweep", s.Rates)
		}
	case record.ModeRate:
		switch {
		case s.Rates.IsZero() && v.c.given("sweep.rates"): // it did not decode: Read said why
		case s.Rates.IsZero():
			v.badAt("sweep.rates", []string{"sweep.rates", "sweep.mode"}, "missing: a rate sweep needs its offered rates in requests/s (a list such as [1, 2, 4], {start, max, factor} or auto)")
		default:
			if err := s.Rates.Validate(); err != nil {
				v.bad("sweep.rates", "%v", err)
			}
		}
	default:
		v.bad("sweep.mode", "%q: must be concurrency or rate", s.Mode)
	}
	v.rateKeys()
}

// trace checks a trace replay's sweep keys (workload.trace set, or sweep.time_scales): an
// arrival-rate sweep whose levels are time scales, not rates. It reports whether the
// configuration replays a trace (mode then checked here, the other rate keys by rateKeys).
func (v *validation) trace() bool {
	s := v.c.Sweep
	if !v.c.Workload.Trace.Enabled() {
		if len(s.TimeScales) > 0 {
			v.badAt("sweep.time_scales", []string{"sweep.time_scales"}, "%v: time scales replay a trace: set workload.trace.file (or --trace FILE)", s.TimeScales)
		}
		return false
	}
	at := []string{"workload.trace.file", "workload.trace"}
	if s.Mode != record.ModeRate {
		v.badAt("sweep.mode", append([]string{"sweep.mode"}, at...), "%q: a trace replay (workload.trace) is an arrival-rate sweep: set sweep.mode: rate, or leave it out with --trace", s.Mode)
	}
	if !s.Rates.IsZero() {
		v.badAt("sweep.rates", []string{"sweep.rates"}, "%s: a trace replay offers the trace at sweep.time_scales (--time-scale), not rates", s.Rates)
	}
	if len(s.TimeScales) > 0 {
		for _, err := range workload.ValidateTimeScales("sweep.time_scales", s.TimeScales) {
			v.bad("sweep.time_scales", "%s", strings.TrimPrefix(err.Error(), "sweep.time_scales"))
		}
	}
	v.rateKeys()
	return true
}

// rateKeys checks the keys every rate sweep shares: arrival, burstiness, max_concurrency (on
// a sharded sweep the global cap: at least one slot, at most MaxProcessWorkers, on every
// shard), stop.max_unsustainable.
func (v *validation) rateKeys() {
	s := v.c.Sweep
	switch s.Arrival {
	case "", sweep.ArrivalPoisson, sweep.ArrivalGamma, sweep.ArrivalConstant:
	default:
		v.bad("sweep.arrival", "%q: must be poisson, gamma or constant", s.Arrival)
	}
	switch b := s.Burstiness; {
	case b == 0 && v.c.given("sweep.burstiness"):
		v.bad("sweep.burstiness", "is 0: must be > 0 (the gamma shape; 1 = Poisson, < 1 burstier; leave it out for 1)")
	case b == 0:
	case !(b > 0) || math.IsInf(b, 0):
		v.bad("sweep.burstiness", "is %g: must be > 0 (the gamma shape; 1 = Poisson, < 1 burstier)", b)
	case s.Arrival != sweep.ArrivalGamma:
		v.badAt("sweep.burstiness", []string{"sweep.burstiness", "sweep.arrival"}, "is %g: only arrival gamma has a burstiness (arrival is %s)", b, cmp.Or(s.Arrival, sweep.ArrivalPoisson))
	}
	shards := max(v.c.Shard.Count, 1)
	switch m, c := s.MaxConcurrency, s.InFlightCap(); {
	case m < 0:
		v.bad("sweep.max_concurrency", "is %d: must be ≥ 1 (0 = %d)", m, sweep.DefaultMaxConcurrency)
	case shards == 1 && m > selfcheck.MaxProcessWorkers:
		v.bad("sweep.max_concurrency", "is %d: must be ≤ %d, the most requests in flight one process carries", m, selfcheck.MaxProcessWorkers)
	case (c+shards-1)/shards > selfcheck.MaxProcessWorkers:
		v.badAt("sweep.max_concurrency", []string{"sweep.max_concurrency", "shard.count"}, "is %d: over shard.count %d, a shard carries up to %d requests in flight, more than the %d one process carries: must be ≤ %d",
			m, shards, (c+shards-1)/shards, selfcheck.MaxProcessWorkers, shards*selfcheck.MaxProcessWorkers)
	case c < shards:
		v.badAt("sweep.max_concurrency", []string{"sweep.max_concurrency", "shard.count"}, "is %d: less than shard.count %d; the cap is the sweep's, max_concurrency ÷ shard.count on each shard, and every shard needs at least 1: must be ≥ %d",
			c, shards, shards)
	}
	if s.Stop.MaxUnsustainable < 0 {
		v.bad("sweep.stop.max_unsustainable", "is %d: must be ≥ 0 (0 = never stop for it)", s.Stop.MaxUnsustainable)
	}
}

// Given reports whether key (a dotted path such as "sweep.max_concurrency") was set by the
// configuration file or a flag, rather than left at its default.
func (c *Config) Given(key string) bool { return c.given(key) }

// given reports whether the file or a flag set key (a key that did not decode keeps its
// default, and Read has reported it).
func (c *Config) given(key string) bool {
	if c.src == nil {
		return false
	}
	_, flag := c.src.origins[key]
	_, line := c.src.lines[key]
	return flag || line
}
