//go:build !linux

package sweep

import "time"

// kernelSlack is 0 where kernelSleep is the runtime's own sleep: the timer does it all.
const kernelSlack = 0

// kernelSleep sleeps d.
func kernelSleep(d time.Duration) { time.Sleep(d) }
