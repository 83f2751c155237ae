package selfcheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// processRunDelay returns the total time the process's threads have spent runnable but
// waiting for a CPU: the sum of the second field of /proc/self/task/*/schedstat (run_delay,
// nanoseconds). It is how a starved client shows itself when another process takes the
// machine's cores: Go's scheduling latency does not see it, since the netpoller itself is
// not running then.
func processRunDelay() (time.Duration, bool) {
	tasks, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total int64
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			return 0, false
		}
		v, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			return 0, false
		}
		total += v
	}
	return time.Duration(total), true
}
