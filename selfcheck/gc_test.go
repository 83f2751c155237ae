package selfcheck

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the current GOGC setting (SetGCPercent returns the previous value).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestSetLoadGC(t *testing.T) {
	before := gcPercent()
	t.Setenv("GOGC", "")
	restore := SetLoadGC()
	if got := gcPercent(); got != loadGCPercent {
		t.Errorf("GOGC unset: SetLoadGC left GC percent %d, want %d", got, loadGCPercent)
	}
	restore()
	if got := gcPercent(); got != before {
		t.Errorf("restore: GC percent %d, want the previous %d", got, before)
	}

	t.Setenv("GOGC", "300")
	restore = SetLoadGC()
	if got := gcPercent(); got != before {
		t.Errorf("GOGC=300 set by the user: SetLoadGC changed GC percent to %d", got)
	}
	restore()
}
