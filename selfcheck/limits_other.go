//go:build !unix

package selfcheck

// raiseDescriptorLimit reports no descriptor limit: this system has no RLIMIT_NOFILE.
func raiseDescriptorLimit() (soft, hard uint64) { return 0, 0 }

// openDescriptors returns -1: unknown on this system.
func openDescriptors() int { return -1 }
