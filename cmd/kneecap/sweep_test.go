package main

// `kneecap sweep` in-process: its flags and configuration errors, an unreachable target, and
// short sweeps of the built-in simulator (what a run writes, interrupt and resume, the header
// it prints).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

func TestSweepUnreachable(t *testing.T) {
	e, _, stderr := testEnv()
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	err := run(context.Background(), e, []string{"sweep", "--url", "http://127.0.0.1:1/v1", "--model", "x", "-o", dir})
	elapsed := time.Since(start)
	if code := exitCode(err); code != exitUnreachable {
		t.Fatalf("exit code %d (%v), want %d\nstderr: %s", code, err, exitUnreachable, stderr)
	}
	msg := err.Error()
	if !strings.Contains(msg, "http://127.0.0.1:1/v1") || !strings.Contains(msg, "connect") || strings.Contains(msg, "\n") {
		t.Errorf("error %q should be one line naming the URL and the cause", msg)
	}
	if elapsed > server.PreflightTimeout {
		t.Errorf("took %v, want under %v", elapsed, server.PreflightTimeout)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed preflight left %s behind (%v)", dir, err)
	}
}

func TestSweepBadConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("name: x\nsweep:\n  duraton: 5s\n  warmup: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, _, stderr := testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", p})
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit code %d (%v), want %d", code, err, exitUsage)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	want := []string{p + ":3: sweep.duraton: unknown key (sweep takes levels", p + ":4: sweep.warmup: duration needs a unit"}
	if len(lines) != len(want) {
		t.Fatalf("stderr has %d lines, want %d (one per problem):\n%s", len(lines), len(want), stderr)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q does not contain %q", i+1, lines[i], w)
		}
	}
}

func TestSweepBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--levels", "4,2"}, "--levels: sweep.levels: levels must increase"},
		{[]string{"sweep", "--levels", "1,x"}, `"x" is not an integer`},
		{[]string{"sweep", "--url", "http://h/v1"}, "target.model: missing"},
		{[]string{"sweep", "--api", "grpc"}, "--api: target.api"},
		{[]string{"sweep", "extra"}, "unexpected argument"},
		{[]string{"sweep", "--resume", "/x", "--levels", "1"}, "--resume takes the configuration"},
		{[]string{"sweep", "--resume", "/x", "--refine", "1"}, "--resume takes the configuration"},
		{[]string{"sweep", "--resume", "/x", "--dataset", "d.jsonl"}, "--dataset cannot change it"},
		{[]string{"sweep", "--resume", "/x", "--gpu-metrics", "off"}, "--gpu-metrics cannot change it"},
		{[]string{"sweep", "--resume", "/x", "--slo-ttft-p95", "1s"}, "kneecap analyze /x --slo-ttft-p95"},
		{[]string{"sweep", "--resume", "/x", "--plan-users", "100"}, "(plan the finished run with kneecap analyze /x --plan-users"},
		{[]string{"sweep", "--resume", "/x", "--replica-cost-per-hour", "2"}, "(plan the finished run with kneecap analyze /x --replica-cost-per-hour"},
		{[]string{"sweep", "--resume", "/x", "--energy-cost-per-kwh", "0.2"}, "kneecap analyze /x --energy-cost-per-kwh"},
		{[]string{"sweep", "--refine", "-1"}, "--refine: sweep.refine: is -1: must be ≥ 0"},
	} {
		e, _, stderr := testEnv()
		err := run(context.Background(), e, tc.args)
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d", tc.args, code, err, exitUsage)
			continue
		}
		if got := stderr.String() + errString(err); !strings.Contains(got, tc.want) {
			t.Errorf("%v: output %q does not contain %q", tc.args, got, tc.want)
		}
	}
}

// TestSweepSimulator sweeps the in-process simulator at 1, 2 and 4 (fastSweep) and checks what
// the run wrote: every file, the levels, the requests of each, the server metrics and the
// server's description of itself. It is not parallel: with the CPU-bound tests beside it,
// its levels came out client-bound on a busy machine, and with no valid level the console
// states no maximum throughput.
func TestSweepSimulator(t *testing.T) {
	dir, r := sharedFastSweep(t)
	for _, f := range []string{rundir.ConfigFile, rundir.RecordsFile, rundir.LevelsFile, rundir.ServerMetricsFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v (empty or missing)", f, err)
		}
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var conc []int
	for _, l := range res.Runs() {
		conc = append(conc, l.Concurrency)
	}
	if !reflect.DeepEqual(conc, []int{1, 2, 4}) || res.StopReason != sweep.StopDone {
		t.Errorf("levels %v, stop %q; want [1 2 4], %q", conc, res.StopReason, sweep.StopDone)
	}
	if res.Config.Target.URL != "" || res.Config.Target.Model != sim.DefaultModel || res.Config.Simulator.MaxNumSeqs == 0 {
		t.Errorf("config.yaml should keep the simulator target and its resolved config: %+v", res.Config.Target)
	}
	groups := res.Levels
	for i, l := range res.Runs() {
		s := summarizeLevel(groups[i])
		// min_requests (10) counts completions in the window, Requests the requests sent in it:
		// up to c of the first completions were sent during warmup. A starved client (the
		// machine busy with other tests) may not reach min_requests by max_duration; it says so.
		minSent := 10 - l.Concurrency
		if l.Client != nil && l.Client.Bound || !l.Steady && strings.Contains(l.NotSteadyReason, "min_requests") {
			t.Logf("level %d client-bound or short of min_requests (%s): not checking its request count", l.Concurrency, l.NotSteadyReason)
			minSent = 1
		}
		if s.Requests < minSent || s.Errors != 0 || s.OutputTPS <= 0 {
			t.Errorf("level %d: %+v, want ≥ %d requests, no errors", l.Concurrency, s, minSent)
		}
		if l.Server == nil || l.Server.Samples == 0 {
			t.Errorf("level %d: no server metrics summary", l.Concurrency)
		}
	}
	if !strings.Contains(r.stdout, "Maximum output throughput") || !strings.Contains(r.stderr, "  tok/s  ") {
		t.Errorf("missing summary or progress table:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// Provenance: the simulator described itself over GET /version; the run records it with
	// kneecap's version, and the report and analysis.json quote it.
	if s := res.Server; s == nil || s.Engine != server.SimEngine || s.Settings["max_num_seqs"] == "" || s.From != "GET /version" || res.Kneecap == "" {
		t.Errorf("levels.json server %+v, kneecap %q; want the simulator from GET /version and a version", s, res.Kneecap)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ServerInfoFile)); err != nil {
		t.Errorf("%s: %v", rundir.ServerInfoFile, err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "Server: kneecap-sim batching") || !strings.Contains(string(md), "measured by kneecap") {
		t.Errorf("report.md lacks the server line (%v)", err)
	}
	if v, _ := dig(readJSON(t, filepath.Join(dir, "analysis.json")), "meta", "server_info", "engine"); v != server.SimEngine {
		t.Errorf("analysis.json meta.server_info.engine %v", v)
	}
}

// TestSweepInterruptAndResume interrupts a sweep before it starts (the interrupt context is
// already done), checks exit 130 with everything written, then resumes it to the end
// (interruptedSweep). Not parallel, so that the sweep is made before the parallel tests
// start and TestSweepHeaderWithoutName does not wait for it.
func TestSweepInterruptAndResume(t *testing.T) {
	s := sharedInterruptedSweep(t)
	if code := exitCode(s.first.err); code != exitInterrupted {
		t.Fatalf("exit %d (%v), want %d\n%s", code, s.first.err, exitInterrupted, s.first.stderr)
	}
	if s.afterFirstErr != nil {
		t.Fatal(s.afterFirstErr)
	}
	if s.afterFirst.StopReason != sweep.StopInterrupted {
		t.Errorf("stop reason %q, want %q", s.afterFirst.StopReason, sweep.StopInterrupted)
	}

	if s.resumed.err != nil {
		t.Fatalf("resume: %v\n%s", s.resumed.err, s.resumed.stderr)
	}
	dir := s.dir
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 2 || res.StopReason != sweep.StopDone || res.Levels[0].Run.Interrupted || res.Levels[1].Run.Index != 1 {
		t.Errorf("after resume: %d levels, stop %q", len(res.Levels), res.StopReason)
	}
	// target.server_info: false: the server was not asked what it is.
	if _, err := os.Stat(filepath.Join(dir, rundir.ServerInfoFile)); err == nil || res.Server != nil || res.Kneecap == "" {
		t.Errorf("server_info false: %s written (%v), server %+v, kneecap %q; want none, none, a version", rundir.ServerInfoFile, err, res.Server, res.Kneecap)
	}
	for _, r := range res.Records() {
		if r.Level > 1 || r.Concurrency != res.Levels[r.Level].Run.Concurrency {
			t.Fatalf("record of level %d with concurrency %d", r.Level, r.Concurrency)
		}
	}
	// A finished run has nothing to resume.
	e, _, _ := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "--resume", dir}); exitCode(err) != exitUsage || !errors.Is(err, rundir.ErrFinished) ||
		!strings.Contains(err.Error(), "kneecap analyze "+dir) {
		t.Errorf("resuming a finished run: %v, want exit 2 with rundir.ErrFinished, pointing at kneecap analyze", err)
	}
	// The refused resume left the run as it was: still finished, so a second try is refused too.
	if res, err := rundir.Read(dir); err != nil || res.StopReason != sweep.StopDone || len(res.Levels) != 2 {
		t.Errorf("after a refused resume: %v, %v", res, err)
	}
}

// TestSweepEnvBaseURL checks that OPENAI_BASE_URL is the target with --url env, and that the
// API key comes from api_key_env.
func TestSweepEnvBaseURL(t *testing.T) {
	e, _, _ := testEnv()
	e.getenv = func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "sk-test-secret"}[k]
	}
	err := run(context.Background(), e, []string{"sweep", "--url", "env", "--model", "x", "-o", filepath.Join(t.TempDir(), "r")})
	if code := exitCode(err); code != exitUnreachable || !strings.Contains(err.Error(), "http://127.0.0.1:1/v1") {
		t.Fatalf("exit %d (%v), want %d naming OPENAI_BASE_URL's URL", code, err, exitUnreachable)
	}
	if strings.Contains(err.Error(), "sk-test-secret") {
		t.Errorf("error leaks the API key: %v", err)
	}
}

// TestSweepHeaderWithoutName: a run without a name prints "kneecap sweep: model …" (no
// space before the colon); with one, "kneecap sweep NAME: model …". The runs are shared: the
// resumed sweep of interruptedSweep has no name, fastSweep is named "fast" (both made by the
// sequential TestSweepSimulator and TestSweepInterruptAndResume before this runs, unless
// -run leaves them out).
func TestSweepHeaderWithoutName(t *testing.T) {
	t.Parallel()
	unnamed := sharedInterruptedSweep(t).resumed
	_, named := sharedFastSweep(t)
	for _, tc := range []struct {
		run  cmdRun
		want string
	}{
		{unnamed, "kneecap sweep: model kneecap-sim at "},
		{named, "kneecap sweep fast: model kneecap-sim at "},
	} {
		if tc.run.err != nil {
			t.Fatalf("sweep: %v\n%s", tc.run.err, tc.run.stderr)
		}
		if first, _, _ := strings.Cut(tc.run.stdout, "\n"); !strings.HasPrefix(first, tc.want) {
			t.Errorf("header %q, want it to start with %q", first, tc.want)
		}
	}
}
