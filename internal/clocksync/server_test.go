package clocksync

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"
)

// readTimeout bounds a test's wait for the server to answer or close a connection.
const readTimeout = 5 * time.Second

// closedByServer reads c until the server closes it (a reset included: it closed with our
// bytes unread), and fails if that takes readTimeout.
func closedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(readTimeout))
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("%s: the server did not close the connection: %v", what, err)
	}
}

// TestServerDropsStrayClients: frames that are not a request of this version (another
// magic, another version, an answer sent back, random bytes, an HTTP request) end their
// connection at once; a client silent or slow past Idle is dropped; and a real reading is
// answered all the while.
func TestServerDropsStrayClients(t *testing.T) {
	t.Parallel()
	srv := NewServer()
	srv.Idle = 100 * time.Millisecond
	addr := serve(t, srv)
	req := request(7)
	wrongVersion, asAnswer := req, req
	wrongVersion[4] = 2
	asAnswer[5] = kindAnswer
	rng := rand.New(rand.NewPCG(1, 27))
	random := make([]byte, 4*requestSize)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	stray := map[string][]byte{
		"another magic":              append([]byte("KNKD"), req[4:]...),
		"version 2":                  wrongVersion[:],
		"an answer frame":            asAnswer[:],
		"random bytes":               random,
		"an HTTP request":            []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"a request after a good one": append(req[:], random[:requestSize]...),
	}
	for name, frame := range stray {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(frame)
		closedByServer(t, c, name)
		c.Close()
	}
	// A silent client and one that sent half a request hold their connections ...
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	half, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	half.Write(req[:requestSize/2])
	// ... while a reading is answered ...
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	if _, err := Read(ctx, addr, DefaultOptions()); err != nil {
		t.Errorf("read beside stray clients: %v", err)
	}
	// ... until Idle drops them.
	closedByServer(t, silent, "a silent client")
	closedByServer(t, half, "half a request")
}

// TestServerConnLimit: past MaxConns connections a new one is closed at once, and a reading
// gets through once a connection is freed.
func TestServerConnLimit(t *testing.T) {
	t.Parallel()
	srv := NewServer()
	srv.MaxConns = 2
	addr := serve(t, srv)
	var held []net.Conn
	for range srv.MaxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := request(1)
		c.Write(req[:]) // answered: the connection holds a slot
		c.SetReadDeadline(time.Now().Add(readTimeout))
		if _, err := io.ReadFull(c, make([]byte, answerSize)); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	closedByServer(t, over, "a connection past MaxConns")
	over.Close()
	held[0].Close()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	if _, err := Read(ctx, addr, DefaultOptions()); err != nil {
		t.Errorf("read once a slot is free: %v", err)
	}
}

// FuzzServeConn feeds any bytes to one connection of a Server: it never panics, answers
// exactly the whole valid requests before the first frame that is not one (each with its
// nonce and the server's id), and returns once the client hangs up.
func FuzzServeConn(f *testing.F) {
	req, other := request(1), request(2)
	f.Add([]byte{})
	f.Add(req[:])
	f.Add(append(req[:], other[:]...))
	f.Add(append(req[:], other[:5]...))
	f.Add(append(req[:], []byte("GET / HTTP/1.1\r\n\r\n")...))
	f.Add([]byte("KNKC\x01\x01\x00\x00"))
	f.Add(bytes.Repeat([]byte{0xff}, 100))
	f.Add(bytes.Repeat(req[:], maxExchanges+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		srv := &Server{ID: 42, Idle: time.Minute, Now: func() time.Time { return time.Unix(0, 1234) }}
		want := validRequests(data)
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() { defer close(done); srv.serveConn(context.Background(), server) }()
		go client.Write(data) // ends with an error once either side closes
		client.SetReadDeadline(time.Now().Add(readTimeout))
		for i := range want {
			var a [answerSize]byte
			if _, err := io.ReadFull(client, a[:]); err != nil {
				t.Fatalf("answer %d of %d: %v", i+1, want, err)
			}
			if checkHeader(a[:], kindAnswer) != nil || binary.BigEndian.Uint64(a[nonceOffset:]) != binary.BigEndian.Uint64(data[i*requestSize+nonceOffset:]) ||
				int64(binary.BigEndian.Uint64(a[serverOffset:])) != 1234 || binary.BigEndian.Uint64(a[idOffset:]) != 42 {
				t.Fatalf("answer %d: % x", i+1, a)
			}
		}
		if len(data)-want*requestSize >= requestSize { // a whole frame that is no request, or maxExchanges made
			if n, err := client.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("after %d answers: read %d bytes, %v; want the server to hang up", want, n, err)
			}
		}
		client.Close()
		select {
		case <-done:
		case <-time.After(readTimeout):
			t.Fatal("serveConn did not return after the client hung up")
		}
	})
}

// validRequests counts the whole requests data begins with, up to maxExchanges.
func validRequests(data []byte) int {
	n := 0
	for len(data) >= requestSize && n < maxExchanges && checkHeader(data, kindRequest) == nil {
		data, n = data[requestSize:], n+1
	}
	return n
}

// TestServeListenerClosedElsewhere: when its listener is closed by another (ctx still live),
// Serve closes its open connections before it waits for them, then returns the listener's
// error: a connection idle under a 1 h Idle does not hold it (before, it did, for as long).
func TestServeListenerClosedElsewhere(t *testing.T) {
	t.Parallel()
	srv := NewServer()
	srv.Idle = time.Hour
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := request(1)
	c.Write(req[:]) // answered: the connection is served, and now idle
	c.SetReadDeadline(time.Now().Add(readTimeout))
	if _, err := io.ReadFull(c, make([]byte, answerSize)); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve: %v, want the listener's closing", err)
		}
	case <-time.After(readTimeout):
		t.Fatalf("Serve still waits %v after its listener closed, an idle connection open", readTimeout)
	}
	closedByServer(t, c, "a connection open when the listener closed")
}
