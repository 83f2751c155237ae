//go:build linux && !race

package openai

// raceAcquireIO does nothing outside race builds (see readlag_race.go).
func raceAcquireIO(uintptr) {}
