//go:build !unix

package selfcheck

import "time"

// processCPUTime is not available on this platform: ClientStats.CPUUtilization stays 0.
func processCPUTime() (time.Duration, bool) { return 0, false }
