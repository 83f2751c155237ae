package record

import (
	"fmt"
	"time"
)

// ArrivalFit is how a merged arrival-rate level's send times fit the arrival process it asked
// for (levels.json "arrivals", on a level `kneecap merge` joined from shards; DESIGN §8): the
// gaps between consecutive sends of the level's sent arrivals, all shards together, on the
// reference clock.
type ArrivalFit struct {
	// Process is the arrival process asked for: poisson, gamma or constant.
	Process string `json:"process"`
	// Count is the number of gaps (the sent arrivals less one).
	Count int `json:"count"`
	// CV is the gaps' coefficient of variation (standard deviation ÷ mean); ExpectedCV the
	// process's: 1 for Poisson, 1/√shape for gamma, 0 for constant.
	CV         float64 `json:"cv"`
	ExpectedCV float64 `json:"expected_cv"`
	// KSD and KSP are the one-sample Kolmogorov–Smirnov statistic of the gaps against the
	// process's gap distribution (exponential, or gamma, of mean 1/rate) and its p-value;
	// absent for the constant process, which has no distribution to test against.
	KSD *float64 `json:"ks_d,omitempty"`
	KSP *float64 `json:"ks_p,omitempty"`
}

// ShardLag is one shard's part of a merged arrival-rate or trace level (levels.json "shards";
// DESIGN §8): the arrivals it sent, how late it started them behind the schedule
// (Record.StartLag) and the clock offset its times were shifted by.
type ShardLag struct {
	// Index is the shard's number.
	Index int `json:"index"`
	// Requests is the arrivals the shard sent (cancelled unsent ones not counted).
	Requests int `json:"requests"`
	// LagP50 and LagP99 are the median and p99 of their schedule lag.
	LagP50 time.Duration `json:"lag_p50_ns"`
	LagP99 time.Duration `json:"lag_p99_ns"`
	// ClockOffset is the offset its records were shifted by (−ClockOffset: onto the
	// reference clock) and ClockUncertainty that reading's uncertainty; both 0 without one.
	ClockOffset      int64 `json:"clock_offset_ns"`
	ClockUncertainty int64 `json:"clock_uncertainty_ns"`
}

// ClockSummary is the one line a merged sweep gives on its shards' clocks (the console and
// the report's subtitle): the range of the offsets its levels' shards were shifted by, and
// the largest uncertainty of those readings — "clock offsets −0.210 … +50.000 ms applied,
// largest uncertainty ±0.100 ms". "" when no level records a shard's offset or uncertainty
// (no merge, or no clock server).
func ClockSummary(runs []LevelRun) string {
	var lo, hi, unc int64
	first, measured := true, false
	for _, r := range runs {
		for _, s := range r.Shards {
			if first {
				lo, hi, first = s.ClockOffset, s.ClockOffset, false
			}
			lo, hi, unc = min(lo, s.ClockOffset), max(hi, s.ClockOffset), max(unc, s.ClockUncertainty)
			measured = measured || s.ClockOffset != 0 || s.ClockUncertainty != 0
		}
	}
	if !measured {
		return ""
	}
	ms := func(ns int64) string { return fmt.Sprintf("%+.3f", float64(ns)/1e6) }
	span := ms(lo) + " … " + ms(hi)
	if lo == hi {
		span = ms(lo)
	}
	return fmt.Sprintf("clock offsets %s ms applied, largest uncertainty ±%.3f ms", span, float64(unc)/1e6)
}
