package main

// A server silent from the start, and a signal during a long drain, through the CLI
// (DESIGN §3.8, §7): docs/reliability.md tabulates these tests.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sweep"
)

// TestSweepSilentListener runs `kneecap sweep --url … --levels 1,4` with every default
// against a port that accepts connections and never sends a byte: exit 3 within the
// preflight's 10 s (the acceptance bound is 90 s) with a sentence naming the silence, and a
// results directory that says so (DESIGN §3.1): no levels, no records (GET /v1/models hung,
// so no completion request was sent), the stop reason and the report.
func TestSweepSilentListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	defer func() {
		ln.Close()
		<-accepted
		for _, c := range conns {
			c.Close()
		}
	}()
	url := "http://" + ln.Addr().String() + "/v1"
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	start := time.Now()
	err = run(context.Background(), e, []string{"sweep", "--url", url, "--model", "m", "--levels", "1,4", "-o", dir})
	el := time.Since(start)
	if code := exitCode(err); code != exitUnreachable {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitUnreachable, stderr)
	}
	if el > server.PreflightTimeout+5*time.Second {
		t.Errorf("took %v, want about the preflight's %v", el, server.PreflightTimeout)
	}
	if want := "sweep: preflight: " + url + ": no answer within 10s"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start %q", err, want)
	}
	if want := " (results so far in " + dir + ")"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %q, want it to end %q", err, want)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "preflight: the server accepted the connection and answered nothing within 10s: GET /models sent nothing (the completion probe was not sent)"
	if res.StopReason != want || len(res.Levels) != 0 || res.Dropped.Lines() != 0 {
		t.Errorf("stop reason %q, %d levels, %v: want %q, none", res.StopReason, len(res.Levels), res.Dropped, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, rundir.ReportFile)); err != nil || !strings.Contains(string(b), want) {
		t.Errorf("%s: %v, want it to name %q", rundir.ReportFile, err, want)
	}
}

// TestSIGTERMBoundsTheDrain sends one SIGTERM while four 40 s requests are in flight with
// drain_timeout 60 s: the drain ends InterruptDrainTimeout (5 s) after the signal, cancelling
// them, and kneecap exits 130 with the interrupted level written.
func TestSIGTERMBoundsTheDrain(t *testing.T) {
	t.Parallel()
	cfg := writeTestConfig(t, `name: term-drain
simulator: {profile: fixed, ttft: 20ms, itl: 20ms}
workload: {input_tokens: {mean: 16}, output_tokens: {mean: 2000}}
sweep: {levels: [4], warmup: 0s, duration: 30s, min_requests: 1, max_duration: 30s, drain_timeout: 60s}
server_metrics: {interval: 50ms}
`)
	dir := filepath.Join(t.TempDir(), "run")
	p := startKneecap(t, "sweep", "-c", cfg, "-o", dir)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(deadline)
	for running := false; !running; { // every request in flight, as the simulator reports
		samples, _ := rundir.ReadServerMetrics(filepath.Join(dir, rundir.ServerMetricsFile))
		for _, s := range samples {
			running = running || s.Running != nil && *s.Running >= 4
		}
		select {
		case <-tick.C:
		case <-p.done:
			t.Fatalf("kneecap exited early\n%s", p.stderr.String())
		case <-limit:
			t.Fatalf("no scrape showed 4 requests running within %v\n%s", deadline, p.stderr.String())
		}
	}
	p.signal(t, syscall.SIGTERM)
	start := time.Now()
	if code := p.exit(t); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, p.stderr.String())
	}
	if el := time.Since(start); el < sweep.InterruptDrainTimeout-time.Second || el > sweep.InterruptDrainTimeout+10*time.Second {
		t.Errorf("exit took %v after the signal, want about %v (not the 40 s requests)", el, sweep.InterruptDrainTimeout)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 1 || !res.Levels[0].Run.Interrupted || res.Levels[0].Run.Cancelled != 4 {
		t.Fatalf("levels %d: want the interrupted level with its 4 requests cancelled", len(res.Levels))
	}
}
