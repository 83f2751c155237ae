//go:build !race

package sweep_test

// raceEnabled reports that the race detector, which slows every goroutine several times, is on.
const raceEnabled = false
