package main

// Faults through the CLI (DESIGN §7): a sweep against a server that fails a share of its
// requests keeps running, records every failure with its class, stops on the error-rate rule,
// and the analysis and the report count the classes. docs/reliability.md tabulates these
// tests.

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
)

// faultyServer serves the fixed-mode simulator, but answers every third request after the
// first (the preflight probe) with a fault: HTTP 500, HTTP 429 or a stream cut after one
// chunk, in turn. It counts the faults it played.
type faultyServer struct {
	sim    *sim.Server
	n      atomic.Int64
	faults atomic.Int64
	// auth, when set, is required as the bearer token, and echoed in error bodies.
	auth string
	seen atomic.Bool
}

func startFaulty(t *testing.T, f *faultyServer, tlsServer bool) *httptest.Server {
	t.Helper()
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	if f.sim, err = sim.NewServer(cfg); err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewUnstartedServer(f)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // rejected handshakes are the point
		srv.StartTLS()
	} else {
		srv = httptest.NewServer(f)
	}
	t.Cleanup(func() { srv.Close(); f.sim.Close() })
	return srv
}

func (f *faultyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.auth != "" {
		got := r.Header.Get("Authorization")
		if got != "Bearer "+f.auth {
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"bad key %q","type":"invalid_api_key"}}`, got)
			return
		}
		f.seen.Store(true)
		if r.URL.Path == "/get_server_info" {
			// SGLang lists every server argument, its --api-key among them.
			fmt.Fprintf(w, `{"model_path":"m","api_key":%q,"max_running_requests":4,"version":"0.4.1"}`, f.auth)
			return
		}
	}
	if r.Method != http.MethodPost {
		f.sim.ServeHTTP(w, r)
		return
	}
	n := f.n.Add(1) - 1
	if n == 0 || n%3 != 0 {
		f.sim.ServeHTTP(w, r)
		return
	}
	f.faults.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	echo := ""
	if f.auth != "" {
		echo = " for " + r.Header.Get("Authorization")
	}
	switch (n / 3) % 3 {
	case 0:
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":{"message":"engine crashed%s","type":"InternalServerError","code":500}}`, echo)
	case 1:
		w.WriteHeader(429)
		fmt.Fprintf(w, "rate limited%s\n", echo)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}
}

// TestFaultSweepStopsOnErrorRate sweeps a server that fails a third of its requests after the
// preflight: the first level runs to the end with every failure recorded and classified,
// the error-rate rule (5%) stops the sweep there, the exit code is 0, and `kneecap analyze`
// counts the classes in analysis.json and prints them in the report. The prompts are sized in
// words, so that every request after the preflight is a record. Not parallel: it counts
// every fault class in a 500 ms window, which a starved client can leave without one.
func TestFaultSweepStopsOnErrorRate(t *testing.T) {
	f := &faultyServer{}
	srv := startFaulty(t, f, false)
	cfg := writeTestConfig(t, fmt.Sprintf(`name: faulty
target: {url: %s/v1, model: %s, request_timeout: 2s}
workload: {input_tokens: {mean: 8}, output_tokens: {mean: 8}, prompt_sizing: words}
sweep:
  levels: [2, 4, 8]
  warmup: 50ms
  duration: 500ms
  min_requests: 5
  max_duration: 500ms
  drain_timeout: 2s
`, srv.URL, sim.DefaultModel))
	dir := filepath.Join(t.TempDir(), "run")
	e, _, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", dir}); err != nil {
		t.Fatalf("sweep: %v\n%s", err, stderr)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 1 || !strings.Contains(res.StopReason, "above max_error_rate") {
		t.Fatalf("%d levels, stop %q: want the error-rate rule to stop after the first level", len(res.Levels), res.StopReason)
	}
	classes := map[record.ErrorClass]int{}
	for _, r := range res.Records() {
		if !r.OK() {
			classes[r.ErrorClass]++
		}
	}
	// The server's own count of faults is the reference: one record per fault (the +1 is
	// the preflight probe, which is not a record).
	nFaults := int(f.faults.Load())
	if got := classes[record.ErrHTTP5xx] + classes[record.ErrHTTP429] + classes[record.ErrStreamBroken]; got != nFaults || len(classes) != 3 {
		t.Errorf("records by class %v (total %d), server played %d faults of 3 kinds", classes, got, nFaults)
	}
	if len(res.Records())+1 != int(f.n.Load()) {
		t.Errorf("%d records for %d requests after the preflight", len(res.Records()), f.n.Load()-1)
	}

	e, stdout, stderr := testEnv()
	if err := run(context.Background(), e, []string{"analyze", dir, "--bootstrap", "0"}); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	a := readJSON(t, filepath.Join(dir, "analysis.json"))
	lv, ok := dig(a, "levels")
	if !ok || len(lv.([]any)) != 1 {
		t.Fatalf("analysis.json levels: %v", lv)
	}
	ec, ok := lv.([]any)[0].(map[string]any)["error_classes"].(map[string]any)
	if !ok {
		t.Fatalf("analysis.json levels[0] has no error_classes: %v", lv)
	}
	for _, c := range []record.ErrorClass{record.ErrHTTP5xx, record.ErrHTTP429, record.ErrStreamBroken} {
		if n, _ := ec[string(c)].(float64); n <= 0 || int(n) > classes[c] {
			t.Errorf("error_classes[%s] = %v, want 1..%d (the window's share of the records)", c, ec[string(c)], classes[c])
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{`http\_5xx`, `http\_429`, `stream\_broken`} {
		if !strings.Contains(string(md), c) {
			t.Errorf("report.md does not count %s", c)
		}
	}
	if !strings.Contains(stdout.String(), "error rate") {
		t.Errorf("the console summary does not warn about the error rate:\n%s", stdout)
	}
}
