package main

import (
	"strings"
	"testing"
)

// TestPlanFlagsCheckLines: several bad --plan-* values give a line each, every line starting
// with the command (not only the first, as errors.Join's lines would), each naming its flag.
func TestPlanFlagsCheckLines(t *testing.T) {
	t.Parallel()
	f := planFlags{users: -5, qps: -1}
	err := f.check("analyze")
	if err == nil {
		t.Fatal("check of --plan-users -5 --plan-qps -1: no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 {
		t.Fatalf("error %q: %d lines, want one for each bad flag", err, len(lines))
	}
	for i, flag := range []string{"--plan-users", "--plan-qps"} {
		if !strings.HasPrefix(lines[i], "analyze: ") || !strings.Contains(lines[i], flag) {
			t.Errorf("line %d %q: want it to start with \"analyze: \" and name %s", i+1, lines[i], flag)
		}
	}
}
