package clocksync

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Server answers the clock exchange with its wall clock and its instance id.
type Server struct {
	// ID is the server's instance id, random (NewServer): a process that reads its own
	// server knows it by this id (Options.Self) and is the reference.
	ID uint64
	// Now reads the clock served (time.Now when nil; a test skews it).
	Now func() time.Time
	// MaxConns is the most connections served at once (DefaultMaxConns when 0): one more is
	// closed at once.
	MaxConns int
	// Idle is how long a connection may take to send its next request (DefaultIdle when 0):
	// a silent or slow client is dropped after it.
	Idle time.Duration
}

// Defaults of Server's limits.
const (
	// DefaultMaxConns is the most connections a Server serves at once: a sweep has at most a
	// few hundred shards, each with one connection at a time.
	DefaultMaxConns = 256
	// DefaultIdle is how long a connection may wait between requests: Read's exchanges
	// follow each other at once.
	DefaultIdle = 2 * time.Second
	// maxExchanges bounds the exchanges on one connection (Read makes DefaultExchanges).
	maxExchanges = 1024
)

// NewServer returns a Server with a random instance id and the default limits.
func NewServer() *Server {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	id := binary.BigEndian.Uint64(b[:])
	if id == 0 {
		id = 1 // 0 is "no server" in Options.Self
	}
	return &Server{ID: id}
}

// Serve answers the connections ln accepts until ctx ends, then closes ln and every
// connection and returns nil once every connection's goroutine has returned; an error of
// ln other than its closing is returned, after the same clean-up.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait() // deferred first, so run last: after cancel has closed every connection
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	slots := make(chan struct{}, s.maxConns())
	var pause time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("clocksync: serve %s: %w", ln.Addr(), err)
			}
			// Out of descriptors and the like: wait a little, as net/http does.
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
			continue
		}
		pause = 0
		select {
		case slots <- struct{}{}:
		default:
			conn.Close() // too many in flight: the client retries
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.serveConn(ctx, conn)
		}()
	}
}

// serveConn answers conn's requests until it closes, sends something else, is idle for
// s.Idle, has made maxExchanges, or ctx ends.
func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	now := s.Now
	if now == nil {
		now = time.Now
	}
	var req [requestSize]byte
	for range maxExchanges {
		if conn.SetDeadline(time.Now().Add(s.idle())) != nil {
			return
		}
		if _, err := io.ReadFull(conn, req[:]); err != nil {
			return
		}
		if checkHeader(req[:], kindRequest) != nil {
			return // a stray client: drop it
		}
		a := answer(binary.BigEndian.Uint64(req[nonceOffset:]), now().UnixNano(), s.ID)
		if _, err := conn.Write(a[:]); err != nil {
			return
		}
	}
}

func (s *Server) maxConns() int {
	if s.MaxConns > 0 {
		return s.MaxConns
	}
	return DefaultMaxConns
}

func (s *Server) idle() time.Duration {
	if s.Idle > 0 {
		return s.Idle
	}
	return DefaultIdle
}
