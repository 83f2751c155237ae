package selfcheck

import (
	"os"
	"runtime/debug"
)

// loadGCPercent is the garbage collector's target percentage (GOGC) while kneecap generates
// load, unless the user set GOGC. A sweep's live heap is small and mostly per stream (a
// request's buffers, its connection and its record), and Go's heap goal grows with the
// goroutine stacks as well as the live heap (goal = live + (live + stacks) × GOGC/100), so at
// the default of 100 the peak heap is more than twice the live heap. What the collector
// costs follows the allocation rate: since the adapter reads streams without allocating per
// chunk (sweep/openai, sseBody), 50 costs no CPU the load benchmark can resolve (bench/load,
// 1,024 streams: 22.7 and 23.9 µs a token at 50 against 24.1 and 23.0 at 75, within its
// run-to-run noise) and cuts the memory per stream by 9% (54.6–56.0 → 49.7–50.6 KiB at
// 1,024 streams, five runs and four). At 75, before that change, 50 cost 3–5% more CPU per
// token (docs/performance.md).
const loadGCPercent = 50

// SetLoadGC sets the garbage collector to loadGCPercent for a sweep unless the GOGC
// environment variable is set (the user's choice wins). It returns the function that
// restores the previous setting. Call it from main, not from a library path: the setting is
// process-wide.
func SetLoadGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(loadGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
