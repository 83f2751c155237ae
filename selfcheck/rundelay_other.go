//go:build !linux

package selfcheck

import "time"

// processRunDelay is not available on this platform: ClientStats.RunQueueDelay stays 0.
func processRunDelay() (time.Duration, bool) { return 0, false }
