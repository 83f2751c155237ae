package main

// What a new user sees of the command line: one prefix per error, a flag error printed once,
// messages that name the actual problem, and usage text that states the defaults.

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
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

// TestBadFlagOnce: a flag that does not parse is reported once, in one line naming the flag
// as written and what is wrong with its value, then "see kneecap CMD -h"; the usage is not
// printed (before: 54 lines of it, then "parse error"), exit 2.
func TestBadFlagOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "--bogus", "x"}, "kneecap: analyze: --bogus: no such flag"},
		{[]string{"sweep", "--warmup", "soon"}, `kneecap: sweep: --warmup: "soon" is not a duration such as 5s, 250ms or 1m30s`},
		{[]string{"sweep", "--warmup", "5"}, `kneecap: sweep: --warmup: duration needs a unit: write "5s", not 5`},
		{[]string{"analyze", "x.csv", "--slo-ttft-p95", "2"}, `kneecap: analyze: --slo-ttft-p95: duration needs a unit: write "2s", not 2`},
		{[]string{"sweep", "--min-requests", "many"}, `kneecap: sweep: --min-requests: "many" is not an integer`},
		{[]string{"analyze", "x.csv", "--knee-gain", "high"}, `kneecap: analyze: --knee-gain: "high" is not a number`},
		{[]string{"compare", "-o"}, "kneecap: compare: -o needs a value"},
		{[]string{"sim", "--max-num-seqs", "many"}, `kneecap: sim: --max-num-seqs: "many" is not an integer`},
		{[]string{"sim", "--preemption=maybe"}, `kneecap: sim: --preemption: "maybe" is not true or false`},
	} {
		e, stdout, stderr := testEnv()
		err := run(context.Background(), e, tc.args)
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d", tc.args, code, err, exitUsage)
			continue
		}
		lines := outputLines(stderr.String(), err)
		want := []string{tc.want, "kneecap: see kneecap " + tc.args[0] + " -h"}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") || stdout.Len() > 0 {
			t.Errorf("%v: printed %q (stdout %q), want %q", tc.args, lines, stdout, want)
		}
	}
	// -h still prints the usage with every flag, and is not an error.
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"analyze", "-h"}); exitCode(err) != exitOK {
		t.Errorf("analyze -h: %v", err)
	}
	if !strings.Contains(stderr.String(), "-knee-gain") || !strings.Contains(stderr.String(), "-slo-ttft-p95 duration") {
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
// min_requests 100), and those are the defaults config.Default really has.
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
		t.Errorf("config.Default: warmup %v, duration %v, max_duration %v, min_requests %d; DESIGN §9 says 5s, 30s, 3m, 100",
			d.Warmup, d.Duration, d.MaxDuration, d.MinRequests)
	}
}
