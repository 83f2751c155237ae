package workload

import "github.com/kneecap/kneecap/record"

// Workload produces the requests of a sweep. Implementations must be safe for concurrent use
// and deterministic: the request for (worker, seq) depends only on the seed and those numbers,
// not on scheduling.
type Workload interface {
	// Next returns the request that worker sends as its seq-th request of the given level.
	Next(level, worker, seq int) record.Request
}
