//go:build !linux

package sim

import "time"

// threadClock is unavailable off Linux: compute spin burns its steps unmeasured.
type threadClock struct{}

func openThreadClock() *threadClock { return nil }

func (c *threadClock) read() (cpu, queued time.Duration, ok bool) { return 0, 0, false }

func (c *threadClock) close() {}
