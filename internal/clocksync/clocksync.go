// Package clocksync measures a shard's clock against the sweep's reference clock (DESIGN §8):
// one process serves its clock over TCP (Server), the others read it (Read) by Cristian's
// method (F. Cristian, "Probabilistic clock synchronization", Distributed Computing 3(3),
// 1989): of several exchanges on one connection the one with the smallest round trip is
// kept, and the server's reading is taken to lie at its midpoint, so that the offset's error
// is at most half that round trip. NTP reads what the kernel says of its own clock.
//
// The exchange is two fixed-size frames. A request (16 bytes): the magic "KNKC", the version
// (1), the kind (0, a request), two reserved bytes, and an 8-byte nonce the client chose. The
// answer (32 bytes): the magic, the version, the kind (1, an answer), two reserved bytes, the
// nonce echoed, the server's wall clock in Unix ns when it answered, and its instance id, a
// random number per Server. Integers are big-endian. A frame that is not a request of this
// version ends the connection.
package clocksync

import (
	"encoding/binary"
	"errors"
)

// The frames' layout.
const (
	magic        = "KNKC"
	version      = 1
	kindRequest  = 0
	kindAnswer   = 1
	requestSize  = 16 // magic, version, kind, 2 reserved, nonce
	answerSize   = 32 // magic, version, kind, 2 reserved, nonce, server Unix ns, instance id
	headerSize   = 8  // magic, version, kind, 2 reserved
	nonceOffset  = 8
	serverOffset = 16
	idOffset     = 24
)

// errNotExchange is a frame that is not the clock exchange of this version.
var errNotExchange = errors.New("not kneecap's clock exchange (version 1)")

// errFarOff is a server whose clock is more than record.MaxClockOffset from this one's.
var errFarOff = errors.New("its clock is too far from this one's")

// putHeader writes the magic, the version and kind into the frame's first headerSize bytes.
func putHeader(b []byte, kind byte) {
	copy(b, magic)
	b[4], b[5], b[6], b[7] = version, kind, 0, 0
}

// checkHeader accepts a frame of this version and kind; the reserved bytes are ignored.
func checkHeader(b []byte, kind byte) error {
	if string(b[:4]) != magic || b[4] != version || b[5] != kind {
		return errNotExchange
	}
	return nil
}

// request is the frame that asks for the server's clock.
func request(nonce uint64) [requestSize]byte {
	var b [requestSize]byte
	putHeader(b[:], kindRequest)
	binary.BigEndian.PutUint64(b[nonceOffset:], nonce)
	return b
}

// answer is the server's frame: nonce echoed, its clock (Unix ns) and its instance id.
func answer(nonce uint64, unixNS int64, id uint64) [answerSize]byte {
	var b [answerSize]byte
	putHeader(b[:], kindAnswer)
	binary.BigEndian.PutUint64(b[nonceOffset:], nonce)
	binary.BigEndian.PutUint64(b[serverOffset:], uint64(unixNS))
	binary.BigEndian.PutUint64(b[idOffset:], id)
	return b
}
