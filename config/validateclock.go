package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode"
)

// shardClock checks shard.serve_clock and shard.clock_server (DESIGN §8): each a host:port,
// and only on a sharded sweep. serve_clock may leave out the host (every interface) and give
// port 0 (any free port, printed); clock_server needs both.
func (v *validation) shardClock() {
	sh := v.c.Shard
	for _, k := range []struct {
		key, addr string
		listen    bool
	}{{"shard.serve_clock", sh.ServeClock, true}, {"shard.clock_server", sh.ClockServer, false}} {
		switch {
		case k.addr == "":
		case !sh.Sharded():
			v.bad(k.key, "%q: only the shards of a sharded sweep measure their clocks: give --shard I/N (shard.count) too, or leave it out", k.addr)
		default:
			if err := checkHostPort(k.addr, k.listen); err != nil {
				v.bad(k.key, "%q: %v", k.addr, err)
			}
		}
	}
}

// checkHostPort accepts host:port with a port number in [1, 65535] and a host; an address to
// listen on (listen) may leave out the host and give port 0.
func checkHostPort(addr string, listen bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Err) // not the address again
		}
		return fmt.Errorf("not a host:port such as 10.0.0.5:7070 (%w)", err)
	}
	if strings.ContainsFunc(host, func(r rune) bool { return unicode.IsSpace(r) || isControl(r) }) {
		return errors.New("the host holds whitespace or a control character")
	}
	lowest := 1
	if listen {
		lowest = 0
	}
	if p, err := strconv.Atoi(port); err != nil || p < lowest || p > 65535 {
		return fmt.Errorf("port %q: want a number in [%d, 65535]", port, lowest)
	}
	if host == "" && !listen {
		return errors.New("no host: the address of the shard that serves its clock (--serve-clock)")
	}
	return nil
}
