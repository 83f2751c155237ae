package main

// `kneecap sim`'s simulated GPUs: --gpus, --power and the simulator keys gpus and power.

import (
	"context"
	"strings"
	"testing"
)

// TestSimGPUs: the simulated GPUs and their power reach the engine from a config file (its
// profile does not reset them) and from --gpus and --power, the power defaulting to 100 W and
// 700 W; invalid values are problems naming their key or flag, exit 2.
func TestSimGPUs(t *testing.T) {
	cfg := writeTestConfig(t, `simulator: {profile: demo, gpus: 1, power: {idle_w: 120, max_w: 700}}
`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", cfg}, "gpus=1 power=120–700W (÷32 slots)"},
		{[]string{"--gpus", "2"}, "gpus=2 power=100–700W"},
		{[]string{"-c", cfg, "--gpus", "4", "--power", "150:650"}, "gpus=4 power=150–650W"},
		{[]string{"--profile", "fixed", "--fixed-slots", "4", "--gpus", "1"}, "power=100–700W (÷4 slots)"},
	} {
		e, stderr := simEnv()
		if err := run(context.Background(), e, append([]string{"sim", "--addr", "127.0.0.1:0"}, tc.args...)); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, stderr)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: banner lacks %q:\n%s", tc.args, tc.want, stderr)
		}
	}
	e, stderr := simEnv()
	if err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0"}); err != nil || strings.Contains(stderr.String(), "gpus=") {
		t.Errorf("without gpus: %v, banner %q names GPUs", err, stderr)
	}

	bad := writeTestConfig(t, `simulator:
  gpus: 65
  power:
    idle_w: -1
    max_w: 700
`)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-c", bad}, []string{bad + ":2: simulator.gpus: 65 must be in [0, 64]", bad + ":4: simulator.power.idle_w: -1 must be"}},
		{[]string{"--gpus", "1", "--power", "7"}, []string{`--power: "7" is not IDLE_W:MAX_W`, "see kneecap sim -h"}},
		{[]string{"--gpus", "1", "--power", "700:120"}, []string{"power.max_w: 120 must be a finite number of watts ≥ power.idle_w (700)"}},
	} {
		e, stderr := simEnv()
		err := run(context.Background(), e, append([]string{"sim", "--addr", "127.0.0.1:0"}, tc.args...))
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d\n%s", tc.args, code, err, exitUsage, stderr)
			continue
		}
		lines := outputLines(stderr.String(), err)
		if len(lines) != len(tc.want) {
			t.Errorf("%v: %d lines, want %d:\n%s", tc.args, len(lines), len(tc.want), strings.Join(lines, "\n"))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("%v: line %d %q does not contain %q", tc.args, i+1, lines[i], w)
			}
		}
	}
}
