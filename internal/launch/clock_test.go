package launch

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// shardConfig is shard i of 2 of a sweep against an address nothing is sent to, serving its
// clock on serve and measuring against server ("" for either: none), with the flags' origins.
func shardConfig(t *testing.T, i int, serve, server string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Target.URL, cfg.Target.Model = "http://127.0.0.1:1/v1", "m"
	cfg.Sweep.Levels = sweep.LevelsSpec{List: []int{2}}
	cfg.Shard = config.ShardConfig{Index: i, Count: 2, StartAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano),
		ServeClock: serve, ClockServer: server}
	cfg.Override("shard.serve_clock", "--serve-clock")
	cfg.Output.Dir = filepath.Join(t.TempDir(), "run")
	return cfg
}

// readFirst makes the sweep of cfg ready and takes its schedule's first clock reading, as the
// runner does before level 1; it returns the reading and the console. With self, the sweep
// measures against the clock it serves (on the port it was given, 0: any).
func readFirst(t *testing.T, cfg config.Config, skew time.Duration, self bool) (*Sweep, record.ClockOffset, string) {
	t.Helper()
	var log bytes.Buffer
	s, err := New(Env{Log: &log, Getenv: func(string) string { return "" }}, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Release)
	if self {
		s.Cfg.Shard.ClockServer = s.clock.served
	}
	plan := s.Plan(nil)
	if plan.Schedule == nil || plan.Schedule.Clock == nil {
		t.Fatalf("a sharded sweep's plan has no Schedule.Clock: %+v", plan.Schedule)
	}
	plan.Schedule.Skew = skew
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := plan.Schedule.Clock(ctx)
	plan.Schedule.Clock(ctx) // the second reading is not printed
	return s, r, log.String()
}

// TestShardClock: as in a Kubernetes Indexed Job, both shards serve their clocks and measure
// against shard 0's. Shard 0 finds itself the reference (offset 0); shard 1, whose clock
// reads 50 ms ahead (Schedule.Skew), measures +50 ms within its uncertainty (Cristian's bound:
// both clocks are this machine's), and each prints its first reading once. A shard without a
// clock server reports only the kernel's NTP state, and is the reference when it serves its
// clock (the others measure against it). Release stops serving (the port is free).
func TestShardClock(t *testing.T) {
	t.Parallel()
	s0, r0, log0 := readFirst(t, shardConfig(t, 0, "127.0.0.1:0", ""), 0, true)
	addr := s0.clock.served
	if !r0.Reference || r0.Offset != 0 || r0.Server != addr || r0.Error != "" {
		t.Errorf("shard 0's reading %+v: want the reference against %s", r0, addr)
	}
	if want := "kneecap: clock: reference (serves " + addr + ")\n"; !strings.HasSuffix(log0, want) || strings.Count(log0, "clock:") != 1 {
		t.Errorf("shard 0's console %q: want one line %q", log0, want)
	}
	const skew = 50 * time.Millisecond
	_, r1, log1 := readFirst(t, shardConfig(t, 1, "127.0.0.1:0", addr), skew, false)
	if d := r1.Offset - skew.Nanoseconds(); r1.Reference || r1.Error != "" || d < -r1.Uncertainty-1000 || d > r1.Uncertainty+1000 || r1.Uncertainty > time.Millisecond.Nanoseconds() {
		t.Errorf("shard 1's reading %+v: want offset %v within its uncertainty (< 1 ms)", r1, skew)
	}
	if !strings.Contains(log1, "kneecap: clock: +50.") || !strings.Contains(log1, " ms against "+addr+"; serves 127.0.0.1:") {
		t.Errorf("shard 1's console %q: want its offset against %s", log1, addr)
	}
	_, r3, log3 := readFirst(t, shardConfig(t, 0, "127.0.0.1:0", ""), 0, false)
	if !r3.Reference || r3.Server != "" || r3.Offset != 0 || r3.At == 0 || !strings.Contains(log3, "kneecap: clock: reference (serves 127.0.0.1:") {
		t.Errorf("a shard that serves and measures none: %+v, console %q; want the reference", r3, log3)
	}
	_, r2, log2 := readFirst(t, shardConfig(t, 1, "", ""), 0, false)
	if r2.Server != "" || r2.Offset != 0 || r2.Exchanges != 0 || r2.NTP == nil && clockNTPExpected {
		t.Errorf("a shard without a clock server: %+v, want only the NTP state", r2)
	}
	if !strings.Contains(log2, "kneecap: clock: not measured (no --clock-server): trusting NTP (") {
		t.Errorf("console %q", log2)
	}
	s0.Release()
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("after Release, %s is still held: %v", addr, err)
	}
	again.Close()
}

// TestServeClockListenError: an address the clock cannot be served on is exit 2 before
// anything is created, naming the flag and the address.
func TestServeClockListenError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	cfg := shardConfig(t, 0, addr, "")
	_, err = New(Env{Log: &bytes.Buffer{}, Getenv: func(string) string { return "" }}, cfg, "")
	if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), "sweep: --serve-clock: cannot serve the clock on "+addr+": ") ||
		!strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("exit %d, %v: want exit 2 naming --serve-clock and %s", exit.Code(err), err, addr)
	}
	if _, err := os.Stat(cfg.Output.Dir); !os.IsNotExist(err) {
		t.Errorf("results directory: %v, want none", err)
	}
}

// TestClockLine: the console line of each kind of first reading.
func TestClockLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r      record.ClockOffset
		served string
		want   string
	}{
		{record.ClockOffset{Server: "h:1", Offset: 420_000, Uncertainty: 30_000}, "", "clock: +0.42 ms ± 0.03 ms against h:1"},
		{record.ClockOffset{Server: "h:1", Offset: -1_250_000, Uncertainty: 5_000}, "[::]:2", "clock: -1.25 ms ± 0.01 ms against h:1; serves [::]:2"},
		{record.ClockOffset{Server: "h:1", Offset: 1_000_000_000, Uncertainty: 5_000}, "", "clock: +1000.00 ms ± 0.01 ms against h:1"},
		{record.ClockOffset{Server: "h:1", Offset: -3_200_000_000, Uncertainty: 5_000}, ":3", "warning: clock: -3200.00 ms ± 0.01 ms against h:1: the clocks differ by more than 1s (is NTP or chrony running on both machines?); the levels run on it; serves :3"},
		{record.ClockOffset{Server: "h:1", Reference: true}, "[::]:1", "clock: reference (serves [::]:1)"},
		{record.ClockOffset{NTP: &record.NTPState{Synced: true, EstError: 500_000}}, "", "clock: not measured (no --clock-server): trusting NTP (synced, est. error 0.5 ms)"},
		{record.ClockOffset{NTP: &record.NTPState{EstError: 16e9}}, "", "clock: not measured (no --clock-server): trusting NTP (the kernel says the clock is not synced)"},
		{record.ClockOffset{}, ":3", "clock: not measured (no --clock-server): trusting NTP (this system does not say whether it is synced); serves :3"},
		{record.ClockOffset{Server: "h:1", Error: "clock server h:1: no reading in time"}, "", "warning: clock: not measured: clock server h:1: no reading in time: level 1 runs on this machine's clock (offset 0)"},
	} {
		if got := clockLine(tc.r, tc.served); got != tc.want {
			t.Errorf("clockLine(%+v, %q) =\n%q, want\n%q", tc.r, tc.served, got, tc.want)
		}
	}
}
