package openai

import (
	"net"
	"sync/atomic"
	"time"
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

// readLag counts the read lag of the content chunk timestamped now (from t_send): its Unix
// time − the kernel's arrival time of the bytes read last (DESIGN §3.3). Chunks that an earlier
// read had buffered get a larger lag: they waited in the client's buffers.
func (sr *streamRead) readLag(now time.Duration) {
	if a := sr.arrival.Load(); a != 0 {
		sr.lag.Add(sr.sentUnix + int64(now) - a)
	} else {
		sr.lag.Missed++
	}
}
