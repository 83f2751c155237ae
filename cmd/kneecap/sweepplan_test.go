package main

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

// TestSweepPlanFlags: `sweep --plan-users N` becomes the configuration's plan (as
// `analyze --plan-users` does), so the sweep's own report counts the replicas for N users:
// ⌈N ÷ the SLO point⌉ at the SLO point. Without a demand the replicas line says which flags
// give one. A bad value is refused naming the flag. The analysis runs on fixed levels (no
// sweep).
func TestSweepPlanFlags(t *testing.T) {
	t.Parallel()
	levels := analysistest.Saturating().Levels
	headline := func(args ...string) (string, analysis.Result) {
		cfg, _ := sweepConfigOf(t, nil, args...)
		o := cfg.AnalysisOptions()
		o.Bootstrap = 0
		res := analysis.Analyze(levels, analysis.Meta{}, o)
		var b bytes.Buffer
		if err := report.Console(&b, &res); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "Replicas") {
				return line, res
			}
		}
		t.Fatalf("%q: no Replicas line in\n%s", args, b.String())
		return "", res
	}
	line, res := headline("--plan-users", "1000", "--plan-qps", "0")
	if !res.SLO.MaxConcurrency.OK() {
		t.Fatalf("fixture without an SLO point: %+v", res.SLO)
	}
	want := fmt.Sprintf("%d replicas; at the SLO point for 1000 concurrent users", int(math.Ceil(1000/float64(res.SLO.MaxConcurrency))))
	if !strings.Contains(line, want) {
		t.Errorf("--plan-users 1000: %q, want %q", line, want)
	}
	if line, _ = headline(); !strings.Contains(line, "no demand given; next: pass --plan-users N") {
		t.Errorf("no plan: %q, want the flags that give a demand", line)
	}
	cfg, _ := sweepConfigOf(t, nil, "--plan-users", "-3")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--plan-users: plan.concurrent_users: is -3") {
		t.Errorf("--plan-users -3: %v, want an error naming the flag and its key", err)
	}
}
