//go:build linux

package openai

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kneecap/kneecap/record"
)

// Send timestamps (DESIGN §3.3). A stampConn whose socket accepts SO_TIMESTAMPING carries
// software transmit timestamps: the kernel stamps the last byte of each write when it hands
// the packet to the device (for TCP the key, OPT_ID, is that byte's offset in the stream) and
// queues the stamp on the socket's error queue, which Write reads right after each write
// returns (on loopback the stamp is taken inside the send: loopback_xmit calls
// skb_tx_timestamp) and Read once more, non-blocking, while the last write's stamp is still
// missing (a packet a qdisc or the congestion window held back; it has left before any
// answer to it arrives). A request's Sent is the stamp of its own last byte, found by key.
//
// A non-empty error queue raises EPOLLERR. Go's poller marks a descriptor whose epoll event is
// EPOLLERR alone (runtime/netpoll_epoll.go), and every read of it then fails with "not
// pollable" until another event comes. tcp_poll reports EPOLLERR alone only while the socket
// is neither readable nor writable (its send buffer over ⅔ full, or its unsent bytes over half
// the not-sent low-water mark); so a request is stamped only when its bytes cannot fill it:
// at most txStamps.maxBytes, a quarter of the send buffer and of the low-water mark
// (beginRequest turns TX_SOFTWARE off for a larger one, whose Sent is then its write's
// return). The queue is read after every write: no stamp waits while the socket can fill.

// maxMisses is how many requests in a row may ask for a transmit stamp and get none before
// their connection stops asking (txStamps.giveUp).
const maxMisses = 4

// tsFlags are the SO_TIMESTAMPING flags of a stamped socket: software receive stamps
// (SCM_TIMESTAMPING's ts[0] on every read), software transmit stamps reported with their
// byte key and without the packet (TSONLY: no privilege needed). txFlag is added while
// requests are stamped.
const (
	tsFlags = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
	txFlag = unix.SOF_TIMESTAMPING_TX_SOFTWARE
)

// txStamps is a stampConn's send side.
type txStamps struct {
	ok       bool // SO_TIMESTAMPING accepted: transmit stamps can be asked for
	maxBytes int  // the largest request that is stamped (see above)
	// written counts the bytes handed to writes, counted before each write's system call (a
	// reader that sees the answer to a write whose goroutine has not yet run on after it must
	// find its key); wrote is written as it was when the last write returned, wroteAt the
	// client's clock then (Unix ns).
	written atomic.Int64
	wrote   atomic.Int64
	wroteAt atomic.Int64
	on      atomic.Bool // TX_SOFTWARE is set on the socket
	pending atomic.Bool // the last write's stamp was not in the queue yet: Read looks once
	// giveUp is set once maxMisses requests in a row that asked for a stamp got none (a
	// device that does not stamp): the connection stops asking, and looking.
	giveUp atomic.Bool

	mu     sync.Mutex // guards what follows: the latest stamp found and the queue's buffers
	misses int        // requests in a row that asked for a stamp and found none
	have   bool
	key    uint32 // OPT_ID of the latest stamp: the offset of its last byte, mod 2^32
	at     int64  // the stamp, Unix ns
	msg    unix.Msghdr
	oob    [32]uint64 // one error-queue message: SCM_TIMESTAMPING and IP(V6)_RECVERR, 8-byte aligned
}

// enableTX asks fd for software receive and transmit timestamps; false when the kernel
// refuses SO_TIMESTAMPING (the caller then falls back to SO_TIMESTAMPNS, receive only).
func (t *txStamps) enableTX(fd int) bool {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, tsFlags|txFlag) != nil {
		return false
	}
	t.ok = true
	t.on.Store(true)
	t.maxBytes = 0
	if sndbuf, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err == nil && sndbuf > 0 {
		t.maxBytes = min(sndbuf, notSentLowat()) / 4
	}
	return true
}

// notSentLowat is net.ipv4.tcp_notsent_lowat, read once (the largest int when unreadable:
// the kernel's default is unlimited).
var notSentLowat = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_notsent_lowat")
	if err != nil {
		return int(^uint(0) >> 1)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 63)
	if err != nil || v == 0 {
		return int(^uint(0) >> 1)
	}
	return int(v)
})

// Write writes like the TCP connection, counts the bytes (the key of the last) and notes
// the client's clock when the write returned; while transmit stamps are on it then reads
// the error queue.
func (c *stampConn) Write(b []byte) (int, error) {
	t := &c.tx
	t.written.Add(int64(len(b)))
	n, err := c.Conn.Write(b)
	if n < len(b) {
		t.written.Add(int64(n - len(b)))
	}
	t.wroteAt.Store(time.Now().UnixNano())
	t.wrote.Store(t.written.Load())
	if n > 0 {
		if t.on.Load() {
			t.pending.Store(true)
			_ = c.rc.Control(c.drainTXFn)
		}
	}
	return n, err
}

// beginRequest stamps the coming request when it is small enough (see above), turning
// TX_SOFTWARE on or off (a setsockopt only when that changes), and returns the bytes written
// so far: its Sent is the send of a byte written after them.
func (c *stampConn) beginRequest(wireBytes int) int64 {
	t := &c.tx
	t.pending.Store(false)
	if want := wireBytes <= t.maxBytes && !t.giveUp.Load(); t.ok && want != t.on.Load() {
		flags := tsFlags
		if want {
			flags |= txFlag
		}
		t.mu.Lock()
		_ = c.rc.Control(func(fd uintptr) {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags) == nil {
				t.on.Store(want)
			}
			if !want {
				// Nothing may wait in the queue while this request can fill the buffer.
				c.drainTXAll(fd)
			}
		})
		t.mu.Unlock()
	}
	return t.written.Load()
}

// sendTime returns the send of the last byte written after mark: its transmit stamp when
// found (looking in the queue once more if it was missing), else the client's clock when
// its write returned; ok is false when nothing was written after mark, or the write's
// goroutine has not yet noted its return.
func (c *stampConn) sendTime(mark int64) (int64, string, bool) {
	t := &c.tx
	w := t.written.Load()
	if w <= mark {
		return 0, "", false
	}
	key := uint32(w - 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on.Load() && !(t.have && t.key == key) {
		_ = c.rc.Control(c.drainTXLockedFn)
		if t.misses++; !(t.have && t.key == key) && t.misses >= maxMisses {
			t.giveUp.Store(true)
		}
	}
	if t.have && t.key == key {
		t.misses = 0
		return t.at, record.SendTX, true
	}
	if t.wrote.Load() != w {
		return 0, "", false
	}
	return t.wroteAt.Load(), record.SendWrite, true
}

// drainTX reads the error queue of fd (the raw conn's Control function).
func (c *stampConn) drainTX(fd uintptr) {
	c.tx.mu.Lock()
	c.drainTXLocked(fd)
	c.tx.mu.Unlock()
}

// drainTXLocked reads the error queue of fd, non-blocking, until it is empty or holds the
// stamp of the last byte written; the caller holds tx.mu.
func (c *stampConn) drainTXLocked(fd uintptr) { c.drainQueue(fd, false) }

// drainTXAll reads the error queue of fd until it is empty; the caller holds tx.mu.
func (c *stampConn) drainTXAll(fd uintptr) { c.drainQueue(fd, true) }

// drainQueue reads the error queue of fd, non-blocking, until it is empty or, unless all,
// until it gave the stamp of the last byte written. A later stamp of a key already found (a
// retransmission) is ignored: Sent is the first transmission.
func (c *stampConn) drainQueue(fd uintptr, all bool) {
	t := &c.tx
	want := uint32(t.written.Load() - 1)
	for all || !(t.have && t.key == want) {
		t.msg = unix.Msghdr{}
		t.msg.Control = (*byte)(unsafe.Pointer(&t.oob[0]))
		t.msg.SetControllen(len(t.oob) * 8)
		_, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&t.msg)), unix.MSG_ERRQUEUE)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 { // EAGAIN: empty
			break
		}
		if key, at, ok := t.parse(); ok && (!t.have || int32(key-t.key) > 0) {
			t.have, t.key, t.at = true, key, at
		}
	}
	if t.have && t.key == want {
		t.pending.Store(false)
	}
}

// parse reads the stamp and key of the error-queue message in t.msg, parsed by hand
// (unix.ParseSocketControlMessage allocates): a software transmit stamp (SCM_TIMESTAMPING's
// ts[0]) and its IP_RECVERR or IPV6_RECVERR (origin SO_EE_ORIGIN_TIMESTAMPING, info
// SCM_TSTAMP_SND, data the key). ok is false for anything else, or a truncated message.
func (t *txStamps) parse() (key uint32, at int64, ok bool) {
	if t.msg.Flags&unix.MSG_CTRUNC != 0 {
		return 0, 0, false
	}
	oob := unsafe.Slice((*byte)(unsafe.Pointer(&t.oob[0])), len(t.oob)*8)
	n := min(int(t.msg.Controllen), len(oob))
	hdr := unix.CmsgLen(0)
	var haveKey bool
	for off := 0; off+hdr <= n; {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[off]))
		l := int(h.Len)
		if l < hdr || off+l > n {
			break
		}
		data := oob[off+hdr : off+l]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPING:
			at = timespecAt(data, 0)
		case (h.Level == unix.SOL_IP && h.Type == unix.IP_RECVERR) || (h.Level == unix.SOL_IPV6 && h.Type == unix.IPV6_RECVERR):
			if len(data) >= int(unsafe.Sizeof(unix.SockExtendedErr{})) {
				ee := (*unix.SockExtendedErr)(unsafe.Pointer(&data[0]))
				if ee.Errno == uint32(unix.ENOMSG) && ee.Origin == unix.SO_EE_ORIGIN_TIMESTAMPING && ee.Info == unix.SCM_TSTAMP_SND {
					key, haveKey = ee.Data, true
				}
			}
		}
		off += unix.CmsgSpace(l - hdr)
	}
	return key, at, haveKey && at != 0
}

// timespecAt returns the i-th timespec of a control message's data as Unix ns, 0 when the
// data is too short.
func timespecAt(data []byte, i int) int64 {
	size := int(unsafe.Sizeof(unix.Timespec{}))
	if len(data) < (i+1)*size {
		return 0
	}
	return (*unix.Timespec)(unsafe.Pointer(&data[i*size])).Nano()
}
