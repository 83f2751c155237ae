package report

import (
	"fmt"
	"math"

	"github.com/kneecap/kneecap/analysis"
)

// clockNote says which clock the latencies of res are on (DESIGN §3.3), over every level's
// latency population: "Latencies on the kernel's clock: receive timestamps of the chunks, sends
// by transmit timestamps (100% of requests)"; "" when no level has records (an imported
// table).
func clockNote(res *analysis.Result) string {
	var n, kernel, tx int
	for i := range res.Levels {
		c := res.Levels[i].Clock
		if c == nil {
			continue
		}
		k := int(math.Round(c.KernelShare * float64(c.Requests)))
		n, kernel, tx = n+c.Requests, kernel+k, tx+int(math.Round(c.SendTXShare*float64(k)))
	}
	switch {
	case n == 0:
		return ""
	case kernel == 0:
		return "Latencies on the client's clock: the connections had no kernel timestamps (not Linux, or refused)"
	}
	send := fmt.Sprintf("sends by transmit timestamps (%s of requests)", share(tx, kernel))
	switch {
	case tx == 0:
		send = "sends when the write of the request returned (no transmit timestamps)"
	case tx < kernel:
		send += ", the others when the write of the request returned"
	}
	if kernel == n {
		return "Latencies on the kernel's clock: receive timestamps of the chunks, " + send
	}
	return fmt.Sprintf("Latencies on the kernel's clock for %s of requests (receive timestamps of the chunks, %s), on the client's for the others",
		share(kernel, n), send)
}

// share formats a of b as a whole percentage, 100% only when a = b and 0% only when a = 0.
func share(a, b int) string {
	p := math.Round(100 * float64(a) / float64(b))
	if a < b {
		p = min(p, 99)
	}
	if a > 0 {
		p = max(p, 1)
	}
	return fmt.Sprintf("%.0f%%", p)
}
