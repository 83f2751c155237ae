package clocksync

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kneecap/kneecap/record"
)

// TestNTP reads the kernel's clock state twice, through NTP and through adjtimex(2) itself
// (modes 0 sets nothing, so any process may call it), and finds the same account: the
// unsynchronised flag, and the error estimates in ns (the kernel keeps µs). It shows that NTP
// calls adjtimex; TestNTPState checks how the answer is read.
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

// TestNTPState: the kernel's answer read as adjtimex(2) documents it — the clock is
// unsynchronised when the call returns TIME_ERROR or the status has STA_UNSYNC, whatever the
// other bits (STA_PLL: a daemon steers it); the error estimates are µs, given in ns.
func TestNTPState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state  int
		status int32
		want   record.NTPState
	}{
		{unix.TIME_OK, unix.STA_PLL, record.NTPState{Synced: true, EstError: 500_000, MaxError: 16_000_000}},
		{unix.TIME_INS, 0, record.NTPState{Synced: true, EstError: 500_000, MaxError: 16_000_000}},
		{unix.TIME_OK, unix.STA_UNSYNC | unix.STA_PLL, record.NTPState{EstError: 500_000, MaxError: 16_000_000}},
		{unix.TIME_ERROR, unix.STA_PLL, record.NTPState{EstError: 500_000, MaxError: 16_000_000}},
	} {
		tx := unix.Timex{Status: tc.status, Esterror: 500, Maxerror: 16_000}
		if got := ntpState(tc.state, tx); *got != tc.want {
			t.Errorf("state %d, status %#x: %+v, want %+v", tc.state, tc.status, *got, tc.want)
		}
	}
}
