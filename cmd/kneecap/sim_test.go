package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
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
		cfg + ":4: field max_num_seqz not found",
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
