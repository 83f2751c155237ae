//go:build race

package sim

// raceEnabled reports that the race detector, which slows every goroutine several times, is on.
const raceEnabled = true
