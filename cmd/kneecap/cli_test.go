package main

// What a new user sees of the command line: one prefix per error, a flag error printed once,
// messages that name the actual problem, and usage text that states the defaults.

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/sim"
)

// TestNoDoubledPrefix: the sim package prefixes its errors with "sim: "; kneecap sim prints
// them under one "sim: ", for an unknown profile, a port in use and every invalid field.
func TestNoDoubledPrefix(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // one per output line
	}{
		{"unknown profile", []string{"--profile", "nope"}, exitUsage,
			[]string{`sim: unknown profile "nope"`}},
		{"port in use", []string{"--addr", busy.Addr().String()}, exitFailure,
			[]string{"kneecap: sim: listen tcp " + busy.Addr().String() + ": bind: address already in use"}},
		{"two invalid fields", []string{"--profile", "fixed", "--ttft", "-1ms", "--itl", "-1ms"}, exitUsage,
			[]string{"kneecap: sim: ttft: -1ms", "kneecap: sim: itl: -1ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, stderr := simEnv()
			err := run(context.Background(), e, append([]string{"sim"}, tc.args...))
			if code := exitCode(err); code != tc.code {
				t.Fatalf("exit %d (%v), want %d\n%s", code, err, tc.code, stderr)
			}
			// As main prints them: stderr, then "kneecap: " + the error.
			out := stderr.String()
			if msg := errString(err); msg != "" && msg != "exit 2" {
				out += "kneecap: " + msg + "\n"
			}
			lines := outputLines(out, nil)
			if len(lines) != len(tc.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.want), out)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d %q does not contain %q", i+1, lines[i], w)
				}
				if strings.Contains(lines[i], "sim: sim:") || !strings.HasPrefix(lines[i], "kneecap: sim: ") {
					t.Errorf("line %d %q: want exactly one \"kneecap: sim: \" prefix", i+1, lines[i])
				}
			}
		})
	}
	if got := prefixed("sweep", errors.New("sweep: level 1: x")).Error(); got != "sweep: level 1: x" {
		t.Errorf("prefixed doubled a prefix: %q", got)
	}
	if got := prefixed("sweep", errors.New("resume: x")).Error(); got != "sweep: resume: x" {
		t.Errorf("prefixed: %q, want %q", got, "sweep: resume: x")
	}
}

// TestBadFlagOnce: a flag that does not parse is reported once (by main, below the usage),
// not also by the flag package above it; the usage is still printed, exit 2.
func TestBadFlagOnce(t *testing.T) {
	for _, args := range [][]string{
		{"analyze", "--bogus", "x"},
		{"sweep", "--warmup", "soon"},
		{"compare", "-o"},
		{"sim", "--max-num-seqs", "many"},
	} {
		e, _, stderr := testEnv()
		err := run(context.Background(), e, args)
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d", args, code, err, exitUsage)
			continue
		}
		msg := errString(err)
		if !strings.HasPrefix(msg, args[0]+": ") {
			t.Errorf("%v: error %q does not name the command", args, msg)
		}
		detail := strings.TrimPrefix(msg, args[0]+": ")
		if strings.Contains(stderr.String(), detail) {
			t.Errorf("%v: %q is printed on stderr too (main prints it):\n%s", args, detail, stderr)
		}
		if !strings.Contains(stderr.String(), "Usage: kneecap "+args[0]) {
			t.Errorf("%v: no usage on stderr:\n%s", args, stderr)
		}
	}
	// -h still prints the usage with every flag, and is not an error.
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"analyze", "-h"}); exitCode(err) != exitOK {
		t.Errorf("analyze -h: %v", err)
	}
	if !strings.Contains(stderr.String(), "-knee-gain") {
		t.Errorf("analyze -h lacks the flags:\n%s", stderr)
	}
}

// TestCompareMissingRun: a RUN that does not exist is named as such, not as a directory that
// lacks analysis.json.
func TestCompareMissingRun(t *testing.T) {
	good := writeCompareRun(t)
	missing := filepath.Join(t.TempDir(), "nonexistent")
	out := filepath.Join(t.TempDir(), "out")
	e, _, _ := testEnv()
	err := run(context.Background(), e, []string{"compare", good, missing, "-o", out})
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d", code, err, exitUsage)
	}
	if msg := errString(err); msg != "compare: "+missing+": no such file or directory" {
		t.Errorf("error %q, want it to say %s does not exist", msg, missing)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a missing run left %s behind", out)
	}
}

// writeCompareRun writes a directory holding an analysis.json (of the committed sample run).
func writeCompareRun(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "sample-run", "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "analysis.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSweepHeaderWithoutName: a run without a name prints "kneecap sweep: model …" (no
// space before the colon); with one, "kneecap sweep NAME: model …". A one-level sweep of
// the fixed simulator, about half a second.
func TestSweepHeaderWithoutName(t *testing.T) {
	const body = `simulator: {profile: fixed, ttft: 5ms, itl: 1ms}
workload: {input_tokens: {mean: 16}, output_tokens: {mean: 8}}
sweep: {levels: [1], warmup: 0s, duration: 300ms, min_requests: 3, max_duration: 300ms, drain_timeout: 5s}
`
	for _, tc := range []struct{ name, want string }{
		{"", "kneecap sweep: model kneecap-sim at "},
		{"name: tiny\n", "kneecap sweep tiny: model kneecap-sim at "},
	} {
		cfg := writeTestConfig(t, tc.name+body)
		e, stdout, stderr := testEnv()
		if err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", filepath.Join(t.TempDir(), "run")}); err != nil {
			t.Fatalf("sweep: %v\n%s", err, stderr)
		}
		if first, _, _ := strings.Cut(stdout.String(), "\n"); !strings.HasPrefix(first, tc.want) {
			t.Errorf("header %q, want it to start with %q", first, tc.want)
		}
	}
}

// TestAnalyzeRunWithoutRecords: the committed sample run has no records.jsonl; `kneecap
// analyze DIR -o OUT` analyzes its summary.csv, says so in one stderr line, and keeps the
// run's name, model, endpoint, date and stop reason (from levels.json and config.yaml). The
// headline numbers equal those of `kneecap analyze DIR/summary.csv` (the same level table;
// the bootstrap is off so the knee interval is deterministic too).
func TestAnalyzeRunWithoutRecords(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "sample-run")
	e, _, stderr := analyzeEnv()
	out := t.TempDir()
	if err := run(context.Background(), e, []string{"analyze", dir, "-o", out, "--bootstrap", "0"}); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	lines := outputLines(stderr.String(), nil)
	if len(lines) != 1 || !strings.Contains(lines[0], "no records.jsonl") || !strings.Contains(lines[0], "summary.csv") {
		t.Errorf("stderr %q, want one line saying records.jsonl is missing and summary.csv was used", lines)
	}
	got := readJSON(t, filepath.Join(out, "analysis.json"))
	committed := readJSON(t, filepath.Join(dir, "analysis.json"))
	for _, k := range []string{"name", "model", "endpoint", "date", "stop_reason"} {
		w, _ := dig(committed, "meta", k)
		g, _ := dig(got, "meta", k)
		if w == nil || g != w {
			t.Errorf("meta.%s = %v, want the run's %v", k, g, w)
		}
	}

	e2, _, stderr2 := analyzeEnv()
	out2 := t.TempDir()
	if err := run(context.Background(), e2, []string{"analyze", filepath.Join(dir, "summary.csv"), "-o", out2, "--bootstrap", "0"}); err != nil {
		t.Fatalf("analyze summary.csv: %v\n%s", err, stderr2)
	}
	fromCSV := readJSON(t, filepath.Join(out2, "analysis.json"))
	for _, keys := range [][]string{{"knee", "concurrency"}, {"throughput", "max_tps"}, {"ttft_blowup", "concurrency"}, {"slo", "max_concurrency"}} {
		g, ok1 := dig(got, keys...)
		w, ok2 := dig(fromCSV, keys...)
		if !ok1 || !ok2 || g != w {
			t.Errorf("%v: %v from the directory, %v from its summary.csv; want equal", keys, g, w)
		}
	}
}

// TestAnalyzeRunWithoutRecordsErrors: without records.jsonl and summary.csv the error names
// both; without -o the directory's own analysis.json is not replaced by one from the summary.
func TestAnalyzeRunWithoutRecordsErrors(t *testing.T) {
	sample := filepath.Join("..", "..", "examples", "sample-run")
	copyFiles := func(names ...string) string {
		dir := t.TempDir()
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(sample, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		want []string
	}{
		{"no summary.csv", copyFiles("config.yaml", "levels.json"), []string{"-o", t.TempDir()},
			[]string{"no records.jsonl", "no summary.csv"}},
		{"no -o", copyFiles("config.yaml", "levels.json", "summary.csv", "analysis.json"), nil,
			[]string{"no records.jsonl", "-o DIR is required"}},
	} {
		before, _ := os.ReadFile(filepath.Join(tc.dir, "analysis.json"))
		e, _, stderr := analyzeEnv()
		err := run(context.Background(), e, append([]string{"analyze", tc.dir}, tc.args...))
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%s: exit %d (%v), want %d\n%s", tc.name, code, err, exitUsage, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errString(err), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
		if after, _ := os.ReadFile(filepath.Join(tc.dir, "analysis.json")); string(after) != string(before) {
			t.Errorf("%s: analysis.json of %s was rewritten", tc.name, tc.dir)
		}
	}
}

// TestVersion: extra arguments are a usage error; the VCS revision and modified flag are
// printed when the build info has them, and the output is unchanged when it has none.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version", "extra"}, {"--version", "-x"}} {
		e, stdout, _ := testEnv()
		err := run(context.Background(), e, args)
		if code := exitCode(err); code != exitUsage || stdout.Len() > 0 {
			t.Errorf("%v: exit %d (%v), stdout %q; want exit %d and no output", args, code, err, stdout, exitUsage)
		}
	}
	e, stdout, _ := testEnv()
	if err := run(context.Background(), e, []string{"version"}); err != nil || !strings.HasPrefix(stdout.String(), "kneecap ") {
		t.Errorf("version: %v, %q", err, stdout)
	}

	bi := func(settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: settings}
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{bi(), true, "(devel) go1.26.1"},
		{bi(rev), true, "(devel) go1.26.1 rev 0123456789ab"},
		{bi(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), true, "(devel) go1.26.1 rev 0123456789ab"},
		{bi(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), true, "(devel) go1.26.1 rev 0123456789ab (modified)"},
		{nil, false, "(unknown)"},
	} {
		if got := version(tc.bi, tc.ok); got != tc.want {
			t.Errorf("version(%v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}

// TestSweepUsageDefaults: `kneecap sweep -h` states the defaults DESIGN §9 gives the flags
// whose values come from the configuration (warmup 5s, duration 30s, max_duration 3m,
// min_requests 100), and those are the defaults sweep.DefaultConfig really has.
func TestSweepUsageDefaults(t *testing.T) {
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-h"}); exitCode(err) != exitOK {
		t.Fatalf("sweep -h: %v", err)
	}
	help := stderr.String()
	for flag, want := range map[string]string{
		"-warmup": "default 5s", "-duration": "default 30s", "-max-duration": "default 3m,", "-min-requests": "default 100,",
	} {
		_, after, ok := strings.Cut(help, "\n  "+flag+" ")
		desc, _, _ := strings.Cut(after, "\n  -")
		if !ok || !strings.Contains(desc, want) || !strings.Contains(desc, "or the config file's") {
			t.Errorf("%s: usage %q lacks %q and \"or the config file's\"", flag, desc, want)
		}
	}
	d := config.Default().Sweep
	if d.Warmup != 5*time.Second || d.Duration != 30*time.Second || d.MaxDuration != 3*time.Minute || d.MinRequests != 100 {
		t.Errorf("sweep.DefaultConfig: warmup %v, duration %v, max_duration %v, min_requests %d; DESIGN §9 says 5s, 30s, 3m, 100",
			d.Warmup, d.Duration, d.MaxDuration, d.MinRequests)
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
