//go:build linux

package openai

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stampConn is the net.Conn the transport's dialer returns on Linux (DESIGN §3.3): a TCP
// connection with software receive timestamps (SO_TIMESTAMPING, else SO_TIMESTAMPNS) whose
// Read is a recvmsg through the connection's raw conn, so that the kernel's arrival time of
// the bytes read last is known (arrival), and, with SO_TIMESTAMPING, software transmit
// timestamps of what it writes (tx, txstamp_linux.go). Deadlines and Close are the TCP
// connection's; a deadline applies to the raw conn's read as to the TCP conn's. One read
// costs a recvmsg instead of a read and allocates nothing: the message header, its iovec and
// the control buffer are the conn's.
type stampConn struct {
	net.Conn
	rc      syscall.RawConn
	arrival atomic.Int64 // CLOCK_REALTIME ns of the latest read's bytes; 0: none yet
	tx      txStamps

	// Used by Read only (net/http reads a connection from one goroutine at a time).
	msg  unix.Msghdr
	iov  unix.Iovec
	oob  [12]uint64 // the control buffer: an SCM_TIMESTAMPING and an SCM_TIMESTAMPNS, 8-byte aligned
	n    int
	err  error
	b    []byte
	recv func(fd uintptr) bool // c.read, bound once: a method value per Read would allocate

	drainTXFn, drainTXLockedFn func(fd uintptr) // c.drainTX and c.drainTXLocked, bound once
}

// dialStamped is the transport's DialContext: d's connection, wrapped in a stampConn when it
// is TCP and accepts SO_TIMESTAMPING or SO_TIMESTAMPNS; else as dialled (the level then has no
// read lag, and the heuristics judge it).
func dialStamped(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return stamp(c), nil
	}
}

// stamp returns c wrapped in a stampConn, or c when its receive timestamps cannot be enabled.
func stamp(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	sc := &stampConn{Conn: c, rc: rc}
	var stamped bool
	if err := rc.Control(func(fd uintptr) {
		stamped = sc.tx.enableTX(int(fd)) ||
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil
	}); err != nil || !stamped {
		return c
	}
	sc.recv = sc.read
	sc.drainTXFn, sc.drainTXLockedFn = sc.drainTX, sc.drainTXLocked
	return sc
}

// readArrival returns the kernel's arrival time of the bytes read last (Unix ns, 0 when none),
// to be loaded atomically.
func (c *stampConn) readArrival() *atomic.Int64 { return &c.arrival }

// Read reads like the TCP connection's Read, through recvmsg, and notes the bytes' kernel
// receive timestamp.
func (c *stampConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.b, c.n, c.err = b, 0, nil
	if err := c.rc.Read(c.recv); err != nil {
		c.b = nil
		return 0, c.opError(err)
	}
	c.b = nil
	if c.err != nil {
		return 0, c.opError(c.err)
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	return c.n, nil
}

// maxRecvmsg caps one recvmsg: one TLS record at most (5-byte header, 2^14 bytes of plaintext,
// 256 of expansion; RFC 8446 §5.2), so that a read under TLS, whose buffer can be far larger,
// cannot gather a long backlog under the stamp of its last packet (DESIGN §3.3). Plain HTTP
// reads through net/http's 4 KiB buffer, below the cap.
const maxRecvmsg = 5 + 1<<14 + 256

// read is the raw conn's read function: one recvmsg into c.b (at most maxRecvmsg bytes); false
// (wait for the poller) on EAGAIN.
func (c *stampConn) read(fd uintptr) bool {
	c.iov.Base = &c.b[0]
	c.iov.SetLen(min(len(c.b), maxRecvmsg))
	c.msg.Iov = &c.iov
	c.msg.Iovlen = 1
	c.msg.Control = (*byte)(unsafe.Pointer(&c.oob[0]))
	c.msg.SetControllen(len(c.oob) * 8)
	for {
		n, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
		switch errno {
		case 0:
			c.n = int(n)
			c.parseStamp()
			raceAcquireIO(fd)
			if c.tx.pending.Load() && c.tx.mu.TryLock() {
				// The request's last stamp was missing when its write returned: it has left
				// by now (this read may be its answer). One look, non-blocking.
				c.drainTXLocked(fd)
				c.tx.pending.Store(false)
				c.tx.mu.Unlock()
			}
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			c.iov.Base = nil
			return false
		default:
			c.err = errno
		}
		c.iov.Base = nil
		return true
	}
}

// parseStamp stores the receive stamp of the control messages recvmsg returned, parsed by
// hand (unix.ParseSocketControlMessage allocates): SCM_TIMESTAMPING's ts[0] (SO_TIMESTAMPING)
// or SCM_TIMESTAMPNS (SO_TIMESTAMPNS), or 0 when they hold none: the kernel
// stamps packets only once its timestamping is on, which it turns on a little after the first
// socket asks (net_enable_timestamp defers it to a work queue), so the first bytes of the
// first connection may come without one; their chunks count as missed, never with the lag of
// an earlier read.
func (c *stampConn) parseStamp() {
	var stamp int64
	defer func() { c.arrival.Store(stamp) }()
	oob := unsafe.Slice((*byte)(unsafe.Pointer(&c.oob[0])), len(c.oob)*8)
	n := int(c.msg.Controllen)
	hdr := unix.CmsgLen(0)
	for off := 0; off+hdr <= n; {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[off]))
		l := int(h.Len)
		if l < hdr || off+l > n {
			return
		}
		if h.Level == unix.SOL_SOCKET && (h.Type == unix.SCM_TIMESTAMPING || h.Type == unix.SCM_TIMESTAMPNS) {
			if ts := timespecAt(oob[off+hdr:off+l], 0); ts != 0 {
				stamp = ts
			}
		}
		off += unix.CmsgSpace(l - hdr)
	}
}

// opError wraps a read error like net.Conn's Read does (*net.OpError{Op: "read"} with the
// network, the local address as Source and the remote as Addr; io.EOF as is), so that net/http
// and the callers see the timeouts and closed connections they would have seen. The raw
// conn's errors come as *net.OpError{Op: "raw-read"}: their cause is rewrapped
// (a deadline stays a Timeout() and os.ErrDeadlineExceeded, a closed conn net.ErrClosed).
func (c *stampConn) opError(err error) error {
	if errors.Is(err, io.EOF) {
		return err
	}
	if op, ok := err.(*net.OpError); ok {
		if op.Op != "raw-read" {
			return err
		}
		err = op.Err
	}
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError("recvmsg", errno)
	}
	return &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
