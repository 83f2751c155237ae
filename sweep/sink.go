package sweep

import "time"

// Workload produces the requests of a sweep. Implementations must be safe for concurrent use
// and deterministic: the request for (worker, seq) depends only on the seed and those numbers,
// not on scheduling.
type Workload interface {
	// Next returns the request that worker sends as its seq-th request of the given level.
	Next(level, worker, seq int) Request
}

// Sink receives the results of a sweep as it runs. The results directory (Dir) is one.
type Sink interface {
	// LevelDone is called once per finished level, in order, with every record of the level
	// (warmup, measure and drain). It must make the level durable before it returns.
	LevelDone(run LevelRun, records []Record) error
	// Finish is called once when the sweep ends, with the reason it stopped.
	Finish(reason string) error
}

// Stop reasons recorded in levels.json.
const (
	StopDone        = "completed all levels"
	StopInterrupted = "interrupted"
)

// Results is a results directory read back: everything `kneecap analyze` needs.
type Results struct {
	// Dir is the directory read.
	Dir string
	// Config is the resolved configuration (secrets redacted).
	Config Config
	// Start is when the sweep started.
	Start time.Time
	// Endpoint is the target URL (the simulator's loopback URL for in-process runs).
	Endpoint string
	// Levels are the finished levels, in order.
	Levels []LevelRun
	// Records are every request of those levels.
	Records []Record
	// StopReason is why the sweep stopped ("" while it runs).
	StopReason string
}
