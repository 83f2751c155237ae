package openai

import (
	"net"
	"sync/atomic"
)

// readStamper is a connection that knows the kernel's arrival time of the bytes it read last
// (stampConn, Linux): Unix ns, 0 while none is known.
type readStamper interface{ readArrival() *atomic.Int64 }

// arrivalOf returns the arrival clock of the connection net/http gave a request (under TLS,
// of the TCP connection below), or nil when it has none.
func arrivalOf(c net.Conn) *atomic.Int64 {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = nc.NetConn()
	}
	if s, ok := c.(readStamper); ok {
		return s.readArrival()
	}
	return nil
}

// readLag counts the read lag of the content chunk timestamped at unix (Unix ns, read with the
// chunk's own timestamp): unix − the kernel's arrival time of the bytes read last (DESIGN
// §3.3), both on the wall clock, so only a read that straddles a clock step is off. Chunks that
// an earlier read had buffered get a larger lag: they waited in the client's buffers.
// The first content chunk's arrival time is kept (TTFT as the kernel saw it).
func (sr *streamRead) readLag(unix int64) {
	if a := sr.arrival.Load(); a != 0 {
		sr.lag.Add(unix - a)
		if sr.sc.chunks == 1 {
			sr.firstArrival = a
		}
	} else {
		sr.lag.Missed++
	}
}
