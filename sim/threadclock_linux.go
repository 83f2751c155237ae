package sim

import (
	"os"
	"time"
)

// threadClock reads one thread's scheduling times from /proc/thread-self/schedstat: the time
// it ran on a CPU and the time it waited on a run queue, in nanoseconds (the kernel's
// sched-stats documentation).
type threadClock struct {
	f   *os.File
	buf [96]byte
}

// openThreadClock opens the calling thread's schedstat; nil when the kernel does not offer it
// (built without CONFIG_SCHED_INFO). The caller keeps its goroutine locked to the thread.
func openThreadClock() *threadClock {
	f, err := os.Open("/proc/thread-self/schedstat")
	if err != nil {
		return nil
	}
	c := &threadClock{f: f}
	if _, _, ok := c.read(); !ok {
		_ = f.Close()
		return nil
	}
	return c
}

// read returns the thread's CPU and run-queue times so far; ok is false when c is nil or the
// file cannot be read.
func (c *threadClock) read() (cpu, queued time.Duration, ok bool) {
	if c == nil {
		return 0, 0, false
	}
	n, _ := c.f.ReadAt(c.buf[:], 0) // a short read ends with io.EOF
	fields := [2]int64{}
	b := c.buf[:n]
	for i := range fields {
		for len(b) > 0 && b[0] == ' ' {
			b = b[1:]
		}
		digits := 0
		for len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
			fields[i] = fields[i]*10 + int64(b[0]-'0')
			b = b[1:]
			digits++
		}
		if digits == 0 {
			return 0, 0, false
		}
	}
	return time.Duration(fields[0]), time.Duration(fields[1]), true
}

func (c *threadClock) close() {
	if c != nil {
		_ = c.f.Close()
	}
}
