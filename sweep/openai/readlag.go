package openai

import (
	"net"
	"sync/atomic"
)

// connClock is a connection that knows the kernel's times of its bytes (stampConn, Linux;
// DESIGN §3.3): the arrival of the bytes it read last, and the send of a request's last byte.
type connClock interface {
	// readArrival returns the kernel's arrival time of the bytes read last (Unix ns, 0 when
	// none is known), to be loaded atomically.
	readArrival() *atomic.Int64
	// beginRequest is called when a request of about wireBytes bytes gets the connection
	// (GotConn), before it is written; it returns the mark of its start for sendTime.
	beginRequest(wireBytes int) (mark int64)
	// sendTime returns the send of the last byte written after mark (Unix ns): its software
	// transmit timestamp (how sweep.SendTX) or the client's clock when its write returned
	// (sweep.SendWrite); ok is false when nothing was written after mark.
	sendTime(mark int64) (unixNS int64, how string, ok bool)
}

// clockOf returns the kernel clock of the connection net/http gave a request (under TLS, of
// the TCP connection below), or nil when it has none.
func clockOf(c net.Conn) connClock {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = nc.NetConn()
	}
	if s, ok := c.(connClock); ok {
		return s
	}
	return nil
}

// readLag counts the read lag of the content chunk the client timestamped at unix (Unix ns),
// read when the connection's last read had arrived at a (0: no stamp): unix − a (DESIGN §3.3),
// both on the wall clock, so only a read that straddles a clock step is off. Chunks that an
// earlier read had buffered get a larger lag: they waited in the client's buffers. The first
// content chunk's arrival time is kept (TTFT as the kernel saw it).
func (sr *streamRead) readLag(unix, a int64) {
	if a != 0 {
		sr.lag.Add(unix - a)
		if sr.sc.chunks == 1 {
			sr.firstArrival = a
		}
	} else {
		sr.lag.Missed++
	}
}
