package sweep

import "github.com/kneecap/kneecap/record"

// RateMode reports whether the protocol is an arrival-rate (open-loop) sweep.
func (p Protocol) RateMode() bool { return p.Mode == record.ModeRate }

// ArrivalOf returns the protocol's arrival process, its seed the protocol's arrival_seed or,
// when that is 0, workloadSeed.
func (p Protocol) ArrivalOf(workloadSeed int64) Arrival {
	seed := p.ArrivalSeed
	if seed == 0 {
		seed = uint64(workloadSeed)
	}
	return Arrival{Process: p.Arrival, Burstiness: p.Burstiness, Seed: seed}
}

// InFlightCap returns the most requests a rate level runs at once: MaxConcurrency, or
// DefaultMaxConcurrency when it is 0 — the number of streams the client's limits and
// connection pool must carry.
func (p Protocol) InFlightCap() int { return inFlightCap(p.MaxConcurrency) }

// inFlightCap is a rate level's cap given max_concurrency n: n, or DefaultMaxConcurrency
// when n ≤ 0.
func inFlightCap(n int) int {
	if n > 0 {
		return n
	}
	return DefaultMaxConcurrency
}
