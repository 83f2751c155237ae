//go:build unix

package selfcheck

import (
	"os"
	"syscall"
)

// raiseDescriptorLimit raises the soft RLIMIT_NOFILE to the hard limit and returns the soft
// and hard limits then in force (0, 0 when they cannot be read). Where the hard limit is
// unlimited and the system refuses it as a soft limit (macOS caps it at
// kern.maxfilesperproc), the soft limit stays where the Go runtime raised it at start.
func raiseDescriptorLimit() (soft, hard uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return uint64(lim.Cur), uint64(lim.Max)
}

// openDescriptors returns the number of file descriptors the process has open (-1: unknown).
func openDescriptors() int {
	fds, err := os.ReadDir("/dev/fd")
	if err != nil {
		return -1
	}
	return len(fds)
}
