package sweep

import (
	"os"
	"runtime/debug"
)

// LoadGCPercent is the garbage collector's target percentage (GOGC) while kneecap generates
// load, unless the user set GOGC. A sweep's live heap is small and mostly per stream (a
// request's buffers, its connection and its record), and Go's heap goal grows with the
// goroutine stacks as well as the live heap (goal = live + (live + stacks) × GOGC/100), so at
// the default of 100 the peak heap is about 2.4 times the live heap. 75 cuts the peak memory
// per stream by 7–10% (64.5 → 59.5 KiB at 1,024 streams in the load benchmark, bench/load) at
// no CPU cost the benchmark can resolve; 50 would cut it by 18% for 3–5% more CPU per token,
// the wrong trade for a load generator, whose CPU is what must never run out.
const LoadGCPercent = 75

// SetLoadGC sets the garbage collector to LoadGCPercent for a sweep unless the GOGC
// environment variable is set (the user's choice wins). It returns the function that
// restores the previous setting. Call it from main, not from a library path: the setting is
// process-wide.
func SetLoadGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(LoadGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
