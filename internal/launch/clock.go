package launch

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kneecap/kneecap/internal/clocksync"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
)

// shardClock is a sharded sweep's side of the clock exchange (DESIGN §8): the server of
// shard.serve_clock, which answers from before the first level until the sweep is released,
// and what the readings before each level need.
type shardClock struct {
	// served is the address the server listens on ("" when this process serves none).
	served string
	srv    *clocksync.Server
	// skew is the schedule's Skew (a test hook) as of the last reading, which the served
	// clock adds as this process's readings do: from the first reading on (before it, the
	// server serves the machine's clock unskewed; no test reads it earlier).
	skew atomic.Int64
	stop context.CancelFunc
	done chan error
	// first prints the first reading.
	first sync.Once
}

// listenClock starts serving this process's clock on shard.serve_clock when it is set, before
// anything is sent: an address it cannot listen on is exit 2 naming the key's origin (the
// flag or FILE:LINE) and the address.
func (s *Sweep) listenClock() error {
	sh := s.Cfg.Shard
	if !sh.Sharded() {
		return nil
	}
	c := &shardClock{}
	s.clock = c
	if sh.ServeClock == "" {
		return nil
	}
	ln, err := net.Listen("tcp", sh.ServeClock)
	if err != nil {
		origin := cmp.Or(s.Cfg.Origin("shard.serve_clock"), "shard.serve_clock")
		return exit.Usagef("sweep: %s: cannot serve the clock on %s: %w (is another process, or another shard on this machine, serving there? choose another port)",
			origin, sh.ServeClock, err)
	}
	c.served, c.srv = ln.Addr().String(), clocksync.NewServer()
	c.srv.Now = func() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }
	ctx, stop := context.WithCancel(context.Background())
	c.stop, c.done = stop, make(chan error, 1)
	go func() { c.done <- c.srv.Serve(ctx, ln) }()
	return nil
}

// closeClock stops serving the clock (Release); a server that failed on its own is warned
// about.
func (s *Sweep) closeClock() {
	c := s.clock
	if c == nil || c.stop == nil {
		return
	}
	c.stop()
	if err := <-c.done; err != nil {
		fmt.Fprintf(s.Log, "kneecap: warning: clock: %v\n", err)
	}
	c.stop = nil
}

// readClock is the sharded sweep's Schedule.Clock: against shard.clock_server when one is
// given (Cristian's method, clocksync.Read, until ctx ends); else nothing measured (Server
// ""), and a process that serves its clock is the reference the others measure against
// (offset 0); with the kernel's NTP state either way. The first reading is printed.
func (s *Sweep) readClock(ctx context.Context) record.ClockOffset {
	c := s.clock
	skew := s.schedule.Skew
	c.skew.Store(int64(skew))
	var r record.ClockOffset
	if addr := s.Cfg.Shard.ClockServer; addr != "" {
		opts := clocksync.DefaultOptions()
		opts.Now = func() time.Time { return time.Now().Add(skew) }
		if c.srv != nil {
			opts.Self = c.srv.ID
		}
		r, _ = clocksync.Read(ctx, addr, opts) // the error is r.Error
	} else if c.srv != nil {
		r = record.ClockOffset{Reference: true, At: time.Now().Add(skew).UnixNano()}
	}
	r.NTP = clocksync.NTP()
	c.first.Do(func() { fmt.Fprintln(s.Log, "kneecap: "+clockLine(r, c.served)) })
	return r
}

// farClock is the offset past which the first reading is a warning: synchronised machines
// agree to milliseconds, so a second is a clock no daemon steers (record.MaxClockOffset
// bounds what is used at all).
const farClock = time.Second

// clockLine says in one line what reading r found; served is the address this process serves
// its clock on ("" none).
func clockLine(r record.ClockOffset, served string) string {
	also := ""
	if served != "" {
		also = "; serves " + served
	}
	switch {
	case r.Reference:
		return "clock: reference (serves " + served + ")"
	case r.Error != "":
		return "warning: clock: not measured: " + r.Error + ": level 1 runs on this machine's clock (offset 0)" + also
	case r.Server != "" && (r.Offset > int64(farClock) || r.Offset < -int64(farClock)):
		return fmt.Sprintf("warning: clock: %+.2f ms ± %.2f ms against %s: the clocks differ by more than %v (is NTP or chrony running on both machines?); the levels run on it%s",
			ms(r.Offset), ms(r.Uncertainty), r.Server, farClock, also)
	case r.Server != "":
		return fmt.Sprintf("clock: %+.2f ms ± %.2f ms against %s%s", ms(r.Offset), ms(r.Uncertainty), r.Server, also)
	}
	return "clock: not measured (no --clock-server): trusting NTP (" + ntpText(r.NTP) + ")" + also
}

// ntpText says what the kernel says of its clock: "synced, est. error 0.5 ms".
func ntpText(n *record.NTPState) string {
	switch {
	case n == nil:
		return "this system does not say whether it is synced"
	case !n.Synced:
		return "the kernel says the clock is not synced"
	}
	return "synced, est. error " + strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", ms(n.EstError)), "0"), ".") + " ms"
}

// ms converts nanoseconds to milliseconds.
func ms(ns int64) float64 { return float64(ns) / 1e6 }
