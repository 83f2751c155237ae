package main

// Servers that redirect, fall silent or die, through the CLI (DESIGN §3.2, §7):
// docs/reliability.md tabulates these tests.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// netServer serves the fixed-mode simulator (TTFT 5 ms, 1 ms a token) and, from its
// answer-th POST on (counting from 0), plays its fault: silent reads the request and never
// answers; otherwise the server is killed (every connection cut and the port closed).
type netServer struct {
	sim    *sim.Server
	srv    *httptest.Server
	answer int64
	silent bool
	posts  atomic.Int64
	kill   sync.Once
	killed atomic.Int64 // Unix ns of the kill
	wg     sync.WaitGroup
}

func startNetServer(t *testing.T, answer int64, silent bool) *netServer {
	t.Helper()
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	ns := &netServer{answer: answer, silent: silent}
	if ns.sim, err = sim.NewServer(cfg); err != nil {
		t.Fatal(err)
	}
	ns.srv = httptest.NewServer(ns)
	t.Cleanup(func() {
		ns.srv.CloseClientConnections()
		ns.srv.Close()
		ns.wg.Wait()
		ns.sim.Close()
	})
	return ns
}

func (ns *netServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || ns.posts.Add(1)-1 < ns.answer {
		ns.sim.ServeHTTP(w, r)
		return
	}
	if ns.silent {
		_, _ = io.Copy(io.Discard, r.Body) // the request's context ends with its connection only after the body is read
		<-r.Context().Done()
		return
	}
	ns.kill.Do(func() {
		ns.killed.Store(time.Now().UnixNano())
		ns.srv.CloseClientConnections()
		ns.wg.Go(ns.srv.Close) // Close waits for this handler
	})
}

// sweepSilent sweeps levels 1 and 4 of a netServer that answers its first answer requests and
// then reads every request and never answers, with target.answer_budget budget and every other
// setting at its default; it wants exit 1 within the budget and 5 s, and returns the results
// directory, stderr and the error.
func sweepSilent(t *testing.T, answer int64, budget time.Duration) (string, *bytes.Buffer, error) {
	t.Helper()
	ns := startNetServer(t, answer, true)
	cfg := writeTestConfig(t, fmt.Sprintf("target: {url: %s/v1, model: %s, answer_budget: %s}\n",
		ns.srv.URL, sim.DefaultModel, budget))
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	start := time.Now()
	err := run(context.Background(), e, []string{"sweep", "-c", cfg, "--levels", "1,4", "-o", dir})
	el := time.Since(start)
	if code := exitCode(err); code != exitFailure {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitFailure, stderr)
	}
	if el > budget+5*time.Second {
		t.Errorf("the sweep took %v, want ≤ target.answer_budget %v + 5 s", el, budget)
	}
	return dir, stderr, err
}

// TestSweepSilentServer sweeps levels 1 and 4 of a server that answers the preflight and then
// reads every request and never answers, with every setting at its default but a 2 s
// target.answer_budget: the prompt sizing's usage probe waits half of it, the first level's
// worker's first request is cut at nine tenths of it, and the sweep stops there, exit 1, with
// a sentence naming the budget; what was measured is written and analyzed. Before the budget,
// the sizing probe and the level each waited ttft_timeout (a minute).
func TestSweepSilentServer(t *testing.T) {
	t.Parallel()
	const budget = 2 * time.Second
	dir, stderr, err := sweepSilent(t, 1, budget)
	want := "no answer: at concurrency 1 every worker's first request timed out and none was answered " +
		"(openai: request: no answer within target.answer_budget 2s (no request of the first level answered; its deadline at 1.8s of it): " +
		"the server accepted the connection and sent nothing)"
	if !strings.Contains(err.Error(), want) || !strings.Contains(stderr.String(), "stopped after") {
		t.Errorf("error %q, want it to contain %q\n%s", err, want, stderr)
	}
	res, rerr := rundir.Read(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(res.Levels) != 1 || res.StopReason != strings.TrimPrefix(strings.SplitN(err.Error(), " (results", 2)[0], "sweep: ") {
		t.Errorf("%d levels, stop reason %q", len(res.Levels), res.StopReason)
	}
	if _, serr := os.Stat(filepath.Join(dir, "analysis.json")); serr != nil {
		t.Errorf("no analysis written: %v", serr)
	}
}

// TestSweepHungPreflight sweeps a server that lists the model and never answers a request, the
// preflight's probe included, with a 1 s target.answer_budget: the preflight warns and goes on,
// the sizing sends nothing, and the first level's requests are cut at the budget's deadline:
// exit 1 with records.jsonl, the analysis and report.md, within the budget and the writing.
func TestSweepHungPreflight(t *testing.T) {
	t.Parallel()
	dir, stderr, err := sweepSilent(t, 0, time.Second)
	if !strings.Contains(err.Error(), "no answer: at concurrency 1 ") {
		t.Fatalf("%v, want no answer", err)
	}
	for _, want := range []string{"lists the model but the probe request failed", "the server did not answer the preflight's probe: prompts are sized in words"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q\n%s", want, stderr)
		}
	}
	res, rerr := rundir.Read(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(res.Levels) != 1 || len(res.Levels[0].Records) == 0 || res.Levels[0].Records[0].ErrorClass != record.ErrTimeout {
		t.Fatalf("%d levels: want the first level with its timed-out records", len(res.Levels))
	}
	if _, serr := os.Stat(filepath.Join(dir, "report.md")); serr != nil {
		t.Errorf("no report written: %v", serr)
	}
}

// TestSweepRatesAutoSilent: --rates auto against a server that answers the preflight and then
// never answers, with a 1 s target.answer_budget: the probe's pilot request is cut at the
// budget's deadline, and the sweep ends exit 1 with probe.json holding the pilot's record, the
// stop reason in levels.json, the analysis and report.md (before: config.yaml and levels.json
// alone, no record, no report).
func TestSweepRatesAutoSilent(t *testing.T) {
	t.Parallel()
	ns := startNetServer(t, 1, true)
	cfg := writeTestConfig(t, fmt.Sprintf("target: {url: %s/v1, model: %s, answer_budget: 1s}\n", ns.srv.URL, sim.DefaultModel))
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", cfg, "--rates", "auto", "-o", dir})
	if code := exitCode(err); code != exitFailure || !strings.Contains(err.Error(), "the pilot request failed") {
		t.Fatalf("exit %d (%v), want %d, the pilot failed\n%s", code, err, exitFailure, stderr)
	}
	res, rerr := rundir.Read(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if want := "--rates auto probe: the pilot request failed: timeout"; res.StopReason != want {
		t.Errorf("stop reason %q, want %q", res.StopReason, want)
	}
	b, perr := os.ReadFile(filepath.Join(dir, rundir.ProbeFile))
	if perr != nil || !strings.Contains(string(b), `"pilot"`) || !strings.Contains(string(b), "target.answer_budget 1s") {
		t.Errorf("probe.json (%v) does not hold the pilot's record:\n%s", perr, b)
	}
	if _, serr := os.Stat(filepath.Join(dir, "report.md")); serr != nil {
		t.Errorf("no report written: %v", serr)
	}
}

// TestSweepDeadServer kills the server during the first level: the workers back off their
// connect errors, the level ends 10 s (the default) after the last of them started failing,
// and the sweep stops with exit 3 naming the unreachable server, after writing and analyzing
// what it measured; the records of the dead server are a few per worker, not thousands.
func TestSweepDeadServer(t *testing.T) {
	t.Parallel()
	ns := startNetServer(t, 40, false)
	cfg := writeTestConfig(t, fmt.Sprintf(`target: {url: %s/v1, model: %s}
workload: {input_tokens: {mean: 8}, output_tokens: {mean: 8}, prompt_sizing: words}
sweep: {levels: [2, 4], warmup: 50ms, duration: 2s, max_duration: 2s, min_requests: 5, drain_timeout: 2s}
`, ns.srv.URL, sim.DefaultModel))
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", dir})
	if code := exitCode(err); code != exitUnreachable {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitUnreachable, stderr)
	}
	killed := ns.killed.Load()
	if killed == 0 {
		t.Fatal("the server was never killed")
	}
	if el := time.Since(time.Unix(0, killed)); el > sweep.DefaultUnreachableAfter+5*time.Second {
		t.Errorf("the sweep ended %v after the kill, want ≤ %v + 5 s", el, sweep.DefaultUnreachableAfter)
	}
	want := "server unreachable: at concurrency 2 no request reached the server for 10s: every worker's requests failed to connect"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
	res, rerr := rundir.Read(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	connect := 0
	for _, r := range res.Records() {
		if r.ErrorClass == record.ErrConnect {
			connect++
		}
	}
	// 10 ms doubling to 1 s: about 15 attempts a worker in 10 s.
	if connect == 0 || connect > 2*25 {
		t.Errorf("%d connect records from 2 workers, want 1 … 50", connect)
	}
	if _, serr := os.Stat(filepath.Join(dir, "analysis.json")); serr != nil {
		t.Errorf("no analysis written: %v", serr)
	}
}

// TestSweepRedirectPreflight points the sweep at a server that redirects every request (302)
// to a second loopback server: the preflight fails with exit 3 and the redirect's sentence
// naming the Location, no results directory is created, and the second server sees no
// request — so no Authorization header.
func TestSweepRedirectPreflight(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		auth.Store(r.Header.Get("Authorization"))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	e.getenv = func(k string) string {
		if k == "OPENAI_API_KEY" {
			return testKey
		}
		return ""
	}
	err := run(context.Background(), e, []string{"sweep", "--url", srv.URL + "/v1", "--model", "m", "-o", dir})
	if code := exitCode(err); code != exitUnreachable {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitUnreachable, stderr)
	}
	want := fmt.Sprintf("sweep: preflight: %s/v1: redirect: openai: request: 302 Found to %s/v1/chat/completions (another origin than %s): redirect not followed",
		srv.URL, other.URL, srv.URL)
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q, want one line starting %q", err, want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the second server received %d requests (Authorization %q): want none", n, auth.Load())
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("a failed preflight left %s behind (%v)", dir, serr)
	}
}
