package sweep

import (
	"time"

	"golang.org/x/sys/unix"
)

// kernelSlack is how long before an arrival the dispatcher stops trusting the runtime's
// timers and sleeps in the kernel: more than their lateness (up to 1 ms), little enough that
// the goroutine holds a thread, not a P, for that long (a syscall's P is handed off).
const kernelSlack = 2 * time.Millisecond

// kernelSleep sleeps d in nanosleep(2), which wakes within the kernel's timer slack (50 µs by
// default on Linux).
func kernelSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
