package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// ShutdownGrace bounds how long Running.Close lets in-flight streams finish before it cuts
// them.
const ShutdownGrace = 3 * time.Second

// Running is a simulator serving HTTP on a real listener.
type Running struct {
	// URL is the OpenAI base URL, for example "http://127.0.0.1:8000/v1".
	URL string
	// Addr is the address listened on (host:port), with the actual port when ":0" was asked.
	Addr string
	// Server is the engine behind the listener.
	Server *Server

	hs       *http.Server
	serveErr chan error
	once     sync.Once
	err      error
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves a new Server for cfg
// until Close.
func Start(cfg Config, addr string) (*Running, error) {
	srv, err := NewServer(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("sim: %w", err) // net.Listen names the address
	}
	a := ln.Addr().String()
	host, port, _ := net.SplitHostPort(a)
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	r := &Running{
		URL:      "http://" + net.JoinHostPort(host, port) + "/v1",
		Addr:     a,
		Server:   srv,
		hs:       &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second},
		serveErr: make(chan error, 1),
	}
	go func() {
		err := r.hs.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		r.serveErr <- err
	}()
	return r, nil
}

// Shutdown stops accepting connections and lets in-flight requests finish until ctx is done;
// then it cuts the remaining connections, closes the Server and waits for the serving
// goroutine. Later calls return the first call's result.
func (r *Running) Shutdown(ctx context.Context) error {
	r.once.Do(func() { r.err = r.shutdown(ctx) })
	return r.err
}

func (r *Running) shutdown(ctx context.Context) error {
	err := r.hs.Shutdown(ctx)
	if err == nil && r.Server.cfg.CloseAfterStream {
		// http.Server.Shutdown does not wait for hijacked connections, which carry the
		// streams of close_after_stream: let those finish within ctx too.
		err = r.Server.idle(ctx)
	}
	if err != nil {
		err = errors.Join(fmt.Errorf("sim: shutdown: %w", err), r.hs.Close())
		err = errors.Join(err, r.Server.Close())
	} else {
		err = r.Server.Close()
	}
	if serr := <-r.serveErr; serr != nil {
		err = errors.Join(err, fmt.Errorf("sim: serve: %w", serr))
	}
	return err
}

// Close shuts down gracefully within ShutdownGrace, then closes the Server.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	return r.Shutdown(ctx)
}
