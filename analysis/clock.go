package analysis

import (
	"github.com/kneecap/kneecap/record"
)

// Latency clocks of a level (Clock.Latencies).
const (
	ClockKernel = record.ClockKernel
	ClockClient = "client"
	ClockMixed  = "mixed"
)

// Clock says which clock a level's latencies are on (DESIGN §3.3, §4.12): the kernel's
// (receive timestamps of the chunks, sends by transmit timestamps or at the write's return)
// or the client's.
type Clock struct {
	// Latencies is ClockKernel when every request of the latency population is on the
	// kernel's clock (record.Record.Clock), ClockClient when none is, ClockMixed otherwise.
	Latencies string `json:"latencies"`
	// KernelShare is the share of the latency population on the kernel's clock, Requests
	// the population's size (successful requests).
	KernelShare float64 `json:"kernel_share"`
	Requests    int     `json:"requests"`
	// Send says how the sends of those on the kernel's clock were taken: sweep.SendTX when
	// every one by its transmit timestamp, sweep.SendWrite when every one at its write's
	// return, "mixed" for both, "" when none is on the kernel's clock; SendTXShare is the
	// share of them sent by transmit timestamps.
	Send        string  `json:"send"`
	SendTXShare float64 `json:"send_tx_share"`
}

// clockTally counts the clocks of a level's latency population.
type clockTally struct {
	requests, kernel, tx int
	ttftClient           []float64 // TTFT on the client's clock of the TTFT population, ms
}

func (c *clockTally) reset() {
	c.requests, c.kernel, c.tx = 0, 0, 0
	c.ttftClient = c.ttftClient[:0]
}

// add counts r, a request of the latency population.
func (c *clockTally) add(r *record.Record) {
	c.requests++
	ttft := r.TTFT
	if r.KernelClock() {
		c.kernel++
		if r.SendStamp == record.SendTX {
			c.tx++
		}
		ttft = r.ClientTTFT
	}
	if r.TTFT > 0 && ttft > 0 {
		c.ttftClient = append(c.ttftClient, float64(ttft)/1e6)
	}
}

// clock returns the level's Clock (nil for an empty population) and TTFT on the client's
// clock (nil when no request is on the kernel's: TTFT itself is the client's).
func (c *clockTally) clock() (*Clock, *TTFTSummary) {
	if c.requests == 0 {
		return nil, nil
	}
	out := &Clock{KernelShare: float64(c.kernel) / float64(c.requests), Requests: c.requests, Latencies: ClockMixed}
	switch c.kernel {
	case 0:
		out.Latencies = ClockClient
		return out, nil
	case c.requests:
		out.Latencies = ClockKernel
	}
	out.SendTXShare = float64(c.tx) / float64(c.kernel)
	switch c.tx {
	case 0:
		out.Send = record.SendWrite
	case c.kernel:
		out.Send = record.SendTX
	default:
		out.Send = ClockMixed
	}
	return out, ttftSummaryOf(c.ttftClient)
}
