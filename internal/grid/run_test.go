package grid

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// TestOutcomes: what a scenario's sweep returned decides whether the grid carries on (a
// failure of its own, recorded with why), or stops (an interrupt, an unreachable server, a
// server that answered nothing at all); the
// --resume hint only while a scenario is left.
func TestOutcomes(t *testing.T) {
	var log bytes.Buffer
	faults := map[string]Fault{}
	if err := outcome(&log, nil, false, "ok", faults); err != nil || len(faults) != 0 {
		t.Errorf("a finished scenario: %v, %v", err, faults)
	}
	if err := outcome(&log, exit.Usagef("sweep: preflight: model x not found"), false, "bad", faults); err != nil ||
		faults["bad"] != (Fault{Failed, "sweep: preflight: model x not found"}) || !strings.Contains(log.String(), "scenario bad failed") {
		t.Errorf("a failing scenario: %v, %+v, %q; want it recorded and the grid carried on", err, faults, log.String())
	}
	if err := outcome(&log, exit.Printed(exit.Usage), false, "refused", faults); err != nil ||
		faults["refused"].reason != "refused (exit 2; the problems are printed above)" {
		t.Errorf("a refused scenario: %v, %+v", err, faults["refused"])
	}
	down := outcome(&log, exit.With(exit.Unreachable, errors.New("sweep: server unreachable: at N=4")), false, "down", faults)
	if exit.Code(down) != exit.Unreachable || faults["down"].status != Unreachable {
		t.Errorf("an unreachable server: %v (exit %d), %+v; want exit 3, unreachable", down, exit.Code(down), faults["down"])
	}
	// A server that answered nothing at all stops the grid (before: each scenario waited out
	// the answer budget); a server silent after answering is the scenario's failure.
	never := launch.ServerDown(sweep.Outcome{Silent: true, NeverAnswered: true, StopReason: "no answer: at concurrency 1 …"}, "d")
	if err := outcome(&log, never, false, "silent", faults); exit.Code(err) != exit.Failure || faults["silent"].status != Failed {
		t.Errorf("a server that never answered: %v (exit %d), %+v; want the grid stopped, exit 1", err, exit.Code(err), faults["silent"])
	}
	late := launch.ServerDown(sweep.Outcome{Silent: true, StopReason: "no answer: at concurrency 8 …"}, "d")
	if err := outcome(&log, late, false, "late", faults); err != nil {
		t.Errorf("a server silent after answering: %v, want the grid carried on", err)
	}
	stop := outcome(&log, nil, true, "last", faults)
	if exit.Code(stop) != exit.Interrupted {
		t.Errorf("an interrupt after a scenario: %v, want exit 130", stop)
	}
	cfg := config.Default()
	cfg.Scenarios = []config.Scenario{{Name: "only"}}
	dir := t.TempDir()
	finishedRun(t, filepath.Join(dir, "only"))
	if msg := stopped(stop, dir, cfg).Error(); strings.Contains(msg, "--resume") || !strings.Contains(msg, "interrupted after scenario last") {
		t.Errorf("interrupted with nothing left to run: %q, want no --resume hint", msg)
	}
	cfg.Scenarios = append(cfg.Scenarios, config.Scenario{Name: "next"})
	if msg := stopped(down, dir, cfg).Error(); !strings.Contains(msg, "continue the grid with --resume "+dir) || !strings.Contains(msg, "scenario down: sweep: server unreachable") {
		t.Errorf("unreachable with a scenario left: %q, want the --resume hint", msg)
	}
	o := Outcome{failed: []string{"bad"}}
	if err := o.Err(dir, cfg, nil); exit.Code(err) != exit.Failure || !strings.Contains(err.Error(), "1 of 2 scenarios failed: bad") {
		t.Errorf("a grid with a failed scenario: %v, want exit 1 naming it", err)
	}
}

// finishedRun writes a results directory whose sweep finished, with no level.
func finishedRun(t *testing.T, dir string) {
	t.Helper()
	d, err := rundir.Create(dir, config.Default(), "http://127.0.0.1:0/v1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(sweep.StopDone); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := Status(dir); st != Finished {
		t.Fatalf("status %q, want finished", st)
	}
}

// TestConfigDiff: the keys of what a sweep measures that differ are listed, those it records
// with what it found (the model, the URL) are not.
func TestConfigDiff(t *testing.T) {
	a, b := config.Default(), config.Default()
	b.Target.Model, b.Target.URL = "other", "http://other/v1"
	if keys := configDiff(a, b); len(keys) != 0 {
		t.Errorf("target keys: %v, want none", keys)
	}
	b.Workload.InputTokens.Mean++
	b.Sweep.MinRequests++
	if keys := configDiff(a, b); strings.Join(keys, " ") != "sweep.min_requests workload.input_tokens.mean" {
		t.Errorf("keys %v", keys)
	}
}
