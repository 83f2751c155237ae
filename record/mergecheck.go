package record

import "time"

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
