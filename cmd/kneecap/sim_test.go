package main

// `kneecap sim`: its configuration file and its errors in-process, and its signals as a real
// process.

import (
	"bufio"
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kneecap/kneecap/sim"
)

// simEnv is testEnv with the interrupt already delivered: `kneecap sim` starts the server,
// prints what it serves, and shuts down at once.
func simEnv() (*env, *strings.Builder) {
	e, _, _ := testEnv()
	var stderr strings.Builder
	e.stderr = &stderr
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.interrupt = ctx
	return e, &stderr
}

// TestSimConfigFile: `kneecap sim -c FILE` serves the file's simulator section, flags
// override it, and the other sections of a sweep config are accepted.
func TestSimConfigFile(t *testing.T) {
	cfg := writeTestConfig(t, `name: x
target: {model: m}
simulator:
  profile: fixed
  ttft: 40ms
  itl: 5ms
  seed: 7
sweep: {levels: [1, 2]}
`)
	e, stderr := simEnv()
	if err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0", "-c", cfg, "--itl", "3ms"}); err != nil {
		t.Fatalf("sim: %v\n%s", err, stderr)
	}
	for _, want := range []string{"serving http://127.0.0.1:", "fixed engine:", "ttft=40ms", "itl=3ms", "seed=7"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestSimConfigProblems: every problem of the file, one line each naming FILE:LINE, exit 2,
// read exactly as `kneecap sweep -c` reads it.
func TestSimConfigProblems(t *testing.T) {
	cfg := writeTestConfig(t, `simulator:
  profile: fixed
  itl: 5
  max_num_seqz: 4
sweep:
  warmup: many
`)
	e, stderr := simEnv()
	err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0", "-c", cfg})
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitUsage, stderr)
	}
	lines := outputLines(stderr.String(), err)
	want := []string{
		cfg + ":3: simulator.itl: duration needs a unit",
		cfg + ":4: simulator.max_num_seqz: unknown key (simulator takes profile",
		cfg + ":6: sweep.warmup: cannot unmarshal",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q does not contain %q", i+1, lines[i], w)
		}
	}
	if strings.Contains(stderr.String(), "serving") {
		t.Error("sim served despite a bad config")
	}

	// A missing file and an invalid engine are one line each, exit 2.
	for _, args := range [][]string{
		{"-c", filepath.Join(t.TempDir(), "nope.yaml")},
		{"--profile", "fixed", "--itl", "-1ms"},
	} {
		e, stderr := simEnv()
		err := run(context.Background(), e, append([]string{"sim", "--addr", "127.0.0.1:0"}, args...))
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d\n%s", args, code, err, exitUsage, stderr)
		}
		if lines := outputLines(stderr.String(), err); len(lines) != 1 {
			t.Errorf("%v: %d lines, want 1:\n%s", args, len(lines), strings.Join(lines, "\n"))
		}
	}
}

// TestSimComputeAndSlots: --compute and --fixed-slots reach the engine and its banner, and a
// file's invalid simulator value is a problem naming its FILE:LINE.
func TestSimComputeAndSlots(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--compute", "spin", "--max-num-seqs", "4"}, "compute=spin"},
		{[]string{"--profile", "fixed", "--fixed-slots", "4"}, "slots=4"},
	} {
		e, stderr := simEnv()
		if err := run(context.Background(), e, append([]string{"sim", "--addr", "127.0.0.1:0"}, tc.args...)); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: banner lacks %q:\n%s", tc.args, tc.want, stderr)
		}
	}
	cfg := writeTestConfig(t, `simulator:
  profile: fixed
  compute: spin
  fixed_slots: -2
`)
	e, stderr := simEnv()
	err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0", "-c", cfg})
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitUsage, stderr)
	}
	lines := outputLines(stderr.String(), err)
	want := []string{cfg + ":3: simulator.compute: spin needs batching mode", cfg + ":4: simulator.fixed_slots: -2 must be ≥ 0"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q does not contain %q", i+1, lines[i], w)
		}
	}
}

// simProc is `kneecap sim` run as a real process, its stderr read line by line.
type simProc struct {
	cmd    *exec.Cmd
	lines  chan string // stderr's lines; closed at its end
	exited chan error  // cmd.Wait's result, once stderr has ended
	got    []string    // the lines read so far
	waited bool
}

// startSimProc starts `kneecap sim ARGS...`; the cleanup kills and reaps it.
func startSimProc(t *testing.T, args ...string) *simProc {
	t.Helper()
	p := &simProc{
		cmd:    exec.Command(kneecapBinary(t), append([]string{"sim"}, args...)...),
		lines:  make(chan string, 64), // sim writes a handful of lines
		exited: make(chan error, 1),
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exited <- p.cmd.Wait() // Wait closes the pipe: only after stderr is read to its end
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		for range p.lines {
		}
		if !p.waited {
			<-p.exited
		}
	})
	return p
}

// next returns the next stderr line; the test fails at stderr's end or after deadline.
func (p *simProc) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("stderr closed; so far %q", p.got)
		}
		p.got = append(p.got, l)
		return l
	case <-time.After(deadline):
		t.Fatalf("no stderr line within %v; so far %q", deadline, p.got)
	}
	return ""
}

// signal sends sig to the process.
func (p *simProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait reads stderr to its end and returns the exit error (nil for exit 0); the test fails if
// the process has not exited within deadline.
func (p *simProc) wait(t *testing.T) error {
	t.Helper()
	for l := range p.lines {
		p.got = append(p.got, l)
	}
	select {
	case err := <-p.exited:
		p.waited = true
		return err
	case <-time.After(deadline):
		t.Fatalf("sim did not exit within %v; stderr %q", deadline, p.got)
	}
	return nil
}

// TestSimSignal: `kneecap sim` (a real process) stops on SIGINT and on SIGTERM with a message
// that fits a server, not the sweep's, and exits 0.
func TestSimSignal(t *testing.T) {
	if got := interruptMessage([]string{"sim", "--profile", "fixed"}); got != "kneecap sim: stopping" {
		t.Errorf("interruptMessage(sim) = %q", got)
	}
	if got := interruptMessage([]string{"sweep"}); !strings.Contains(got, "interrupt again") {
		t.Errorf("interruptMessage(sweep) = %q", got)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			p := startSimProc(t, "--profile", "fixed", "--addr", "127.0.0.1:0")
			// The signal goes after the server says it is serving (so the handler is set).
			if l := p.next(t); !strings.Contains(l, "serving http://127.0.0.1:") {
				t.Fatalf("first stderr line %q, want the serving line", l)
			}
			p.signal(t, sig)
			if err := p.wait(t); err != nil {
				t.Errorf("exit: %v, want 0; stderr %q", err, p.got)
			}
			if len(p.got) != 2 || p.got[1] != "kneecap sim: stopping" {
				t.Errorf("stderr %q, want the serving line then \"kneecap sim: stopping\"", p.got)
			}
		})
	}
}

// TestSimSecondSignal: at a second signal `kneecap sim` cuts the streams still open at once
// instead of waiting out sim.ShutdownGrace, says so, and still exits 0 (a server stopped as
// asked). Before, it waited the grace and exited 1.
func TestSimSecondSignal(t *testing.T) {
	// A 1,000-token stream at 50 ms per token lasts 50 s: it is open at both signals.
	p := startSimProc(t, "--profile", "fixed", "--itl", "50ms", "--output-tokens", "1000", "--addr", "127.0.0.1:0")
	_, rest, ok := strings.Cut(p.next(t), "serving ")
	url, _, _ := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first stderr line %q, want the serving URL", p.got)
	}
	body := `{"model":"kneecap-sim","stream":true,"max_tokens":1000,"ignore_eos":true,"messages":[{"role":"user","content":"count"}]}`
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for { // the stream is open once a content chunk has arrived
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before its first content chunk: %v", err)
		}
		if strings.Contains(l, `"content":"`) {
			break
		}
	}
	p.signal(t, syscall.SIGINT)
	if l := p.next(t); l != "kneecap sim: stopping" {
		t.Fatalf("after SIGINT: %q, want \"kneecap sim: stopping\"", l)
	}
	second := time.Now()
	p.signal(t, syscall.SIGINT)
	if err := p.wait(t); err != nil {
		t.Errorf("exit: %v, want 0; stderr %q", err, p.got)
	}
	// The cut is immediate; the grace (3 s) is the bound, 10 to 100 times what it takes.
	if took := time.Since(second); took >= sim.ShutdownGrace {
		t.Errorf("exited %v after the second signal, not before the %v grace ran out", took, sim.ShutdownGrace)
	}
	if !slices.Contains(p.got, "kneecap sim: streams still open were cut") {
		t.Errorf("stderr %q does not say the open streams were cut", p.got)
	}
}
