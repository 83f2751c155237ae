package main

import (
	"net"
	"testing"
	"time"
)

// TestClockFlags: --serve-clock and --clock-server take a host:port on a sharded sweep; a bad
// one is one line naming the flag and the key, and an address the clock cannot be served on
// is exit 2 naming the flag and the address, with nothing created or sent (badInput.check).
func TestClockFlags(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	shard := []string{"--levels", "1", "--url", "http://127.0.0.1:1/v1", "--model", "m",
		"--shard", "0/2", "--start-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	tmp := t.TempDir()
	for _, tt := range []badInput{
		{"serve-clock unsharded", "", []string{"--levels", "1", "--serve-clock", ":7070"},
			[]string{`--serve-clock: shard.serve_clock: ":7070": only the shards of a sharded sweep measure their clocks`}},
		{"clock-server without a port", "", append(shard, "--clock-server", "10.0.0.5"),
			[]string{`--clock-server: shard.clock_server: "10.0.0.5": not a host:port such as 10.0.0.5:7070`}},
		{"serve-clock on a busy port", "", append(shard, "--serve-clock", busy.Addr().String()),
			[]string{"sweep: --serve-clock: cannot serve the clock on " + busy.Addr().String() + ": && address already in use"}},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, tmp) })
	}
}
