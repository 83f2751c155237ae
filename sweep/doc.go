// Package sweep measures an inference endpoint level by level: the level plans and protocol it
// runs (its sections of the configuration file, which package config reads and checks), the
// sweep controller and the one level lifecycle — warmup, window, drain, stop, refine — over
// which three executors issue the requests: the closed loop (workers), the open loop (an
// arrival schedule) and the trace replay (a trace's schedule, scaled). It sends through a
// record.Client (sweep/openai's) and records into package record's Record and LevelRun, the
// contract between measuring and analyzing.
//
// A level with concurrency c runs exactly c workers (DESIGN §3). Warmup lasts until the warmup
// time has passed and every worker has completed one request; the measurement window [W0, W1)
// then lasts at least the configured duration and min_requests completions, and is extended
// slice by slice until the steady-state test passes (see SteadyState) or max_duration is
// reached; the drain lets in-flight requests finish up to drain_timeout, then cancels them.
// Levels never overlap and records never cross levels.
//
// Output tokens/s counts the tokens whose chunk arrived inside the window, from every request
// of the level, divided by the window length: numerator and denominator cover the same
// interval. Because a request's chunk times are known only when it finishes, W1 is chosen
// after the fact among slice boundaries that precede the oldest in-flight request's send time,
// and workers keep issuing until then, so the window is fully loaded to its end.
//
// A sharded sweep (Plan.Schedule, DESIGN §8) runs each level on a fixed wall-clock schedule
// and only this process's part of its workers — of a rate level, the arrivals of the one
// global schedule whose index is its own modulo the shards, in its part of the slots — on
// its clock as read against the reference clock before the level (Schedule.Clock);
// rundir.Merge combines the shards' results and chooses each window as above, from the union
// of their records.
//
// sweep never imports the analysis package: stop decisions come through the Judge and Refiner
// interfaces, which analysis implements and the command wires in.
package sweep
