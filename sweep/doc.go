// Package sweep measures an inference endpoint level by level: the level plans and protocol it
// runs (its sections of the configuration file, which package config reads and checks), the
// workload, the closed-loop level runner and the sweep controller, the preflight, the
// server-metrics scraper and the server's identification. It defines the Client interface
// (implemented by sweep/openai, the only importer of go-openai), the Record (the line format
// of records.jsonl) and the LevelRun (of levels.json): the contract between measuring and
// analyzing, so every number can be recomputed offline. Package rundir writes and reads them.
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
// and only this process's part of its workers; rundir.Merge combines the shards' results and
// chooses each window as above, from the union of their records.
//
// sweep never imports the analysis package: stop decisions come through the Judge and Refiner
// interfaces, which analysis implements and the command wires in.
package sweep
