//go:build !linux

package openai

import (
	"context"
	"net"
)

// dialStamped is the transport's DialContext: without kernel receive timestamps on this
// platform, d's connections as dialled (the heuristics judge the client, DESIGN §3.3).
func dialStamped(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return d.DialContext
}
