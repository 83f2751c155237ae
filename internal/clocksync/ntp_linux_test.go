package clocksync

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestNTP reads the kernel's clock state twice, through NTP and through adjtimex(2) itself
// (modes 0 sets nothing, so any process may call it), and finds the same account: the
// unsynchronised flag, and the error estimates in ns (the kernel keeps µs).
func TestNTP(t *testing.T) {
	got := NTP()
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		if got != nil {
			t.Errorf("NTP() = %+v where adjtimex fails (%v): want nil", got, err)
		}
		t.Skipf("adjtimex refused here: %v", err)
	}
	if got == nil {
		t.Fatal("NTP() = nil where adjtimex answers")
	}
	synced := state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0
	if got.Synced != synced || got.MaxError < 0 || got.EstError < 0 || got.MaxError%1000 != 0 {
		t.Errorf("NTP() = %+v; adjtimex: state %d, status %#x, est. error %d µs, max error %d µs",
			got, state, tx.Status, tx.Esterror, tx.Maxerror)
	}
	t.Logf("NTP() = %+v", *got)
}
