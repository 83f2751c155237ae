package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// testEnv returns an env writing to buffers, with no environment variables and an interrupt
// that never fires.
func testEnv() (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{
		stdout:    &out,
		stderr:    &errb,
		getenv:    func(string) string { return "" },
		interrupt: context.Background(),
	}, &out, &errb
}

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
	if elapsed > sweep.PreflightTimeout {
		t.Errorf("took %v, want under %v", elapsed, sweep.PreflightTimeout)
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
	want := []string{p + ":3: field duraton not found", p + ":4: sweep.warmup: duration needs a unit"}
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

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// writeTestConfig writes a config for a fast sweep of the in-process simulator.
func writeTestConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fast.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSweepSimulator(t *testing.T) {
	cfgPath := writeTestConfig(t, `name: fast
workload:
  input_tokens: {dist: fixed, mean: 32}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  warmup: 200ms
  duration: 800ms
  min_requests: 10
  max_duration: 1600ms
  drain_timeout: 5s
server_metrics: {interval: 100ms}
`)
	dir := filepath.Join(t.TempDir(), "run")
	e, stdout, stderr := testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "--levels", "1,2,4", "-o", dir})
	if err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", err, stderr)
	}
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
	if !strings.Contains(stdout.String(), "Maximum output throughput") || !strings.Contains(stderr.String(), "out tok/s") {
		t.Errorf("missing summary or progress table:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	// Provenance: the simulator described itself over GET /version; the run records it with
	// kneecap's version, and the report and analysis.json quote it.
	if s := res.Server; s == nil || s.Engine != sweep.SimEngine || s.Settings["max_num_seqs"] == "" || s.From != "GET /version" || res.Kneecap == "" {
		t.Errorf("levels.json server %+v, kneecap %q; want the simulator from GET /version and a version", s, res.Kneecap)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ServerInfoFile)); err != nil {
		t.Errorf("%s: %v", rundir.ServerInfoFile, err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "Server: kneecap-sim batching") || !strings.Contains(string(md), "measured by kneecap") {
		t.Errorf("report.md lacks the server line (%v)", err)
	}
	if v, _ := dig(readJSON(t, filepath.Join(dir, "analysis.json")), "meta", "server_info", "engine"); v != sweep.SimEngine {
		t.Errorf("analysis.json meta.server_info.engine %v", v)
	}
}

// TestSweepInterruptAndResume interrupts a sweep before it starts (the interrupt context is
// already done), checks exit 130 with everything written, then resumes it to the end.
func TestSweepInterruptAndResume(t *testing.T) {
	cfgPath := writeTestConfig(t, `sweep:
  levels: [1, 2]
  warmup: 100ms
  duration: 500ms
  min_requests: 5
  max_duration: 1s
workload: {input_tokens: {mean: 16}, output_tokens: {mean: 8}}
target: {server_info: false}
`)
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	e.interrupt = stopped
	err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "-o", dir})
	if code := exitCode(err); code != exitInterrupted {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitInterrupted, stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != sweep.StopInterrupted {
		t.Errorf("stop reason %q, want %q", res.StopReason, sweep.StopInterrupted)
	}

	e, _, stderr = testEnv()
	if err := run(context.Background(), e, []string{"sweep", "--resume", dir}); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr)
	}
	res, err = rundir.Read(dir)
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
	e, _, _ = testEnv()
	if err := run(context.Background(), e, []string{"sweep", "--resume", dir}); exitCode(err) != exitUsage || !errors.Is(err, rundir.ErrFinished) {
		t.Errorf("resuming a finished run: %v, want exit 2 with rundir.ErrFinished", err)
	}
	// The refused resume left the run as it was: still finished, so a second try is refused too.
	if res, err := rundir.Read(dir); err != nil || res.StopReason != sweep.StopDone || len(res.Levels) != 2 {
		t.Errorf("after a refused resume: %v, %v", res, err)
	}
}

// TestSweepAcceptance is DESIGN's acceptance check of the whole pipeline: a simulator with
// max_num_seqs 16 swept 1 → 128 doubling shows output TPS flat (±10%) from 16 up and TTFT p50
// at 64 at least 3× that at 8. Reference (DESIGN §6 ground truth): TPS(c) = c ÷ t(c) up to
// S = 16 and flat at S ÷ t(S) beyond; TTFT grows linearly past S as requests queue for a slot.
func TestSweepAcceptance(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1→128 sweep takes about 20 s")
	}
	cfgPath := writeTestConfig(t, `name: acceptance
simulator:
  max_num_seqs: 16
  step_base: 2ms
  step_per_seq: 125us
workload:
  input_tokens: {dist: fixed, mean: 32}
  output_tokens: {dist: fixed, mean: 32}
sweep:
  levels: {start: 1, max: 128, factor: 2}
  warmup: 200ms
  duration: 1s
  min_requests: 10
  max_duration: 2s
  drain_timeout: 10s
  stop: {plateau: false}
`)
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-c", cfgPath, "-o", dir}); err != nil {
		t.Fatalf("sweep: %v\n%s", err, stderr)
	}
	t.Logf("progress:\n%s", stderr)
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	groups := res.Levels
	by := map[int]levelSummary{}
	for i, l := range res.Runs() {
		by[l.Concurrency] = summarizeLevel(groups[i])
	}
	for _, c := range []int{8, 16, 32, 64} {
		if _, ok := by[c]; !ok {
			t.Fatalf("no level %d (stop: %s)", c, res.StopReason)
		}
	}
	var sat []float64
	for c := 16; c <= 128; c *= 2 {
		if s, ok := by[c]; ok {
			sat = append(sat, s.OutputTPS)
		}
	}
	var mean float64
	for _, v := range sat {
		mean += v
	}
	mean /= float64(len(sat))
	for i, v := range sat {
		if v < 0.85*mean || v > 1.15*mean {
			t.Errorf("TPS at concurrency %d is %.0f, more than 15%% from the plateau mean %.0f", 16<<i, v, mean)
		}
	}
	// The plateau is the engine's S ÷ t(S) less prefill and closed-loop gaps: within 25%.
	ideal := res.Config.Simulator.IdealTPS(16)
	if mean > 1.02*ideal || mean < 0.75*ideal {
		t.Errorf("plateau %.0f tokens/s, ideal S÷t(S) = %.0f", mean, ideal)
	}
	if r := float64(by[64].TTFTP50) / float64(by[8].TTFTP50); !(r >= 3) {
		t.Errorf("TTFT p50 at 64 (%v) is %.1f× that at 8 (%v), want ≥ 3×", by[64].TTFTP50, r, by[8].TTFTP50)
	}
}

func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"sim.yaml": false, "vllm.yaml": false, "sglang.yaml": false,
		"llamacpp.yaml": false, "ollama.yaml": false, "openai.yaml": false}
	for _, f := range files {
		c, err := config.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if _, err := c.Sweep.Levels.Expand(); err != nil {
			t.Errorf("%s: levels: %v", f, err)
		}
		want[filepath.Base(f)] = true
	}
	for f, ok := range want {
		if !ok {
			t.Errorf("examples/%s missing", f)
		}
	}
}

func TestDemoConfigValid(t *testing.T) {
	c := config.Demo()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	levels, _ := c.Sweep.Levels.Expand()
	if want := []int{1, 2, 4, 8, 16, 32, 64, 128}; !reflect.DeepEqual(levels, want) {
		t.Errorf("demo levels %v, want %v", levels, want)
	}
}

func TestResultsDirPath(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c := config.Default()
	c.Target.Model = "meta-llama/Llama-3.1-8B"
	if got, want := rundir.DefaultPath(c, now), filepath.Join("runs", "20250102T030405Z-Llama-3.1-8B"); got != want {
		t.Errorf("resultsDirPath = %q, want %q", got, want)
	}
	c.Name = "demo"
	if got, want := rundir.DefaultPath(c, now), filepath.Join("runs", "20250102T030405Z-demo"); got != want {
		t.Errorf("resultsDirPath = %q, want %q", got, want)
	}
	c.Output.Dir = "out/x"
	if got := rundir.DefaultPath(c, now); got != "out/x" {
		t.Errorf("resultsDirPath = %q, want out/x", got)
	}
}

// synthLevel builds a level with a 1 s window holding one successful request per TTFT value
// whose tokens (tps ÷ len(ttfts) each) all arrive inside the window, so the level's output TPS
// is tps, plus errs failed requests.
func synthLevel(index, conc int, tps float64, ttft time.Duration, errs int) (sweep.LevelRun, []sweep.Record) {
	w0 := int64(1e18) + int64(index)*int64(time.Minute)
	run := sweep.LevelRun{Index: index, Concurrency: conc, W0: w0, W1: w0 + int64(time.Second), Steady: true}
	recs := []sweep.Record{{Level: index, Concurrency: conc, Sent: w0, TTFT: ttft, E2E: ttft + 100*time.Millisecond,
		OutputTokens: int(tps), Status: sweep.StatusOK}}
	for i := 0; i < errs; i++ {
		recs = append(recs, sweep.Record{Level: index, Concurrency: conc, Sent: w0 + 1, Status: sweep.StatusError, ErrorClass: sweep.ErrHTTP5xx})
	}
	return run, recs
}

func TestJudge(t *testing.T) {
	type lv struct {
		tps  float64
		ttft time.Duration
		errs int
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		levels []lv
		want   string // prefix of the reason; "" = continue
	}{
		{"growing", []lv{{100, 10 * ms, 0}, {190, 10 * ms, 0}, {350, 12 * ms, 0}}, ""},
		{"plateau", []lv{{100, 10 * ms, 0}, {500, 12 * ms, 0}, {510, 20 * ms, 0}, {515, 40 * ms, 0}}, "plateau"},
		// Flat but TTFT has not grown 3×: not saturated yet (DESIGN §3).
		{"flat without queueing", []lv{{100, 10 * ms, 0}, {500, 12 * ms, 0}, {510, 20 * ms, 0}, {515, 25 * ms, 0}}, ""},
		{"overload", []lv{{100, 10 * ms, 0}, {500, 12 * ms, 0}, {440, 50 * ms, 0}}, "overload"},
		{"errors", []lv{{100, 10 * ms, 0}, {200, 10 * ms, 1}}, "error rate 50.0%"},
		{"ttft", []lv{{100, 10 * ms, 0}, {200, 21 * time.Second, 0}}, "TTFT p95"},
	} {
		cfg := config.Default()
		var levels []sweep.Level
		for i, l := range tc.levels {
			r, rr := synthLevel(i, 1<<i, l.tps, l.ttft, l.errs)
			levels = append(levels, sweep.Level{Run: r, Records: rr})
		}
		got := analysis.StopRules{Rules: cfg.Sweep.Stop}.Decide(levels)
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: Decide = %q, want prefix %q", tc.name, got, tc.want)
		}
	}
}

func TestProgressTTY(t *testing.T) {
	var buf bytes.Buffer
	proto := config.Default().Sweep
	p := newProgress(&buf, true, []int{1, 2}, proto)
	p.LevelStarted(0, 1)
	p.Live(sweep.LiveStats{Index: 0, Concurrency: 1, Phase: sweep.PhaseMeasure, Elapsed: time.Hour, OutputTPS: 123.4, TTFTP50: 42 * time.Millisecond, Completed: 7})
	run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	p.close()
	out := buf.String()
	for _, want := range []string{"level 1/2", "123.4 tok/s", "TTFT p50 42.0ms", "out tok/s", "100.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%q", want, out)
		}
	}
	// Without a terminal: no bar, only the table.
	buf.Reset()
	p = newProgress(&buf, false, []int{1, 2}, proto)
	p.LevelStarted(0, 1)
	p.Live(sweep.LiveStats{Index: 0, Concurrency: 1, Phase: sweep.PhaseMeasure, OutputTPS: 1})
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 2 || strings.Contains(buf.String(), "\r") {
		t.Errorf("non-TTY progress should be a header and one row:\n%q", buf.String())
	}
}

// TestProgressExtendedWindow: a window that ran well past --duration says why.
func TestProgressExtendedWindow(t *testing.T) {
	var buf bytes.Buffer
	proto := config.Default().Sweep
	proto.Duration, proto.MaxDuration, proto.MinRequests = 6*time.Second, time.Minute, 100
	p := newProgress(&buf, false, []int{1}, proto)
	run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
	run.W1 = run.W0 + int64(55800*time.Millisecond)
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	if want := "note: window 55.8s, past duration 6s: a window grows until the level is steady with at least min_requests 100"; !strings.Contains(buf.String(), want) {
		t.Errorf("progress output lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	run.W1 = run.W0 + int64(6200*time.Millisecond) // within 10% of duration: no note
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	if strings.Contains(buf.String(), "past duration") {
		t.Errorf("a window within 10%% of duration got a note:\n%s", buf.String())
	}
}

// TestSweepEnvBaseURL checks that OPENAI_BASE_URL is the target when neither --url nor the
// file gives one, as the OpenAI SDKs do, and that the API key comes from api_key_env.
func TestSweepEnvBaseURL(t *testing.T) {
	e, _, _ := testEnv()
	e.getenv = func(k string) string {
		return map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "sk-test-secret"}[k]
	}
	err := run(context.Background(), e, []string{"sweep", "--model", "x", "-o", filepath.Join(t.TempDir(), "r")})
	if code := exitCode(err); code != exitUnreachable || !strings.Contains(err.Error(), "http://127.0.0.1:1/v1") {
		t.Fatalf("exit %d (%v), want %d naming OPENAI_BASE_URL's URL", code, err, exitUnreachable)
	}
	if strings.Contains(err.Error(), "sk-test-secret") {
		t.Errorf("error leaks the API key: %v", err)
	}
}
