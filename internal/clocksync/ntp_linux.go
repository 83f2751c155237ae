package clocksync

import (
	"golang.org/x/sys/unix"

	"github.com/kneecap/kneecap/record"
)

// NTP returns what the kernel says of its clock's synchronisation: adjtimex(2) with modes 0,
// which reads and sets nothing. Synced is false when the kernel's state is TIME_ERROR or its
// status has STA_UNSYNC (no NTP or chrony daemon steers the clock); the errors are the
// kernel's µs, in ns. Nil when the call fails (a seccomp filter may refuse it).
func NTP() *record.NTPState {
	var tx unix.Timex // Modes 0: read only
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return nil
	}
	return ntpState(state, tx)
}

// ntpState is NTP's account of what adjtimex(2) returned: its state and tx.
func ntpState(state int, tx unix.Timex) *record.NTPState {
	return &record.NTPState{
		Synced:   state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0,
		EstError: int64(tx.Esterror) * 1000,
		MaxError: int64(tx.Maxerror) * 1000,
	}
}
