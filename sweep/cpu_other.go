//go:build !unix

package sweep

import "time"

// processCPUTime is not available on this platform: ClientStats.CPUUtilization stays 0.
func processCPUTime() (time.Duration, bool) { return 0, false }
