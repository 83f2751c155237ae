package main

// Reliability through the CLI (DESIGN §7): bad input is one line per problem naming FILE:LINE,
// exit 2, and nothing written; a sweep against a server that fails a share of its requests
// keeps running, records every failure with its class, stops on the error-rate rule, and the
// analysis and the report count the classes. docs/reliability.md tabulates these tests.

import (
	"context"
	"errors"
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

	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// outputLines returns the non-empty lines a failed command printed: stderr and the error
// main would print (main prints nothing for a bare exit code).
func outputLines(stderr string, err error) []string {
	msg := errString(err)
	if msg == fmt.Sprintf("exit %d", exitCode(err)) {
		msg = ""
	}
	var lines []string
	for _, l := range strings.Split(stderr+"\n"+msg, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestBadInput runs kneecap with every kind of bad input a user writes and checks that each
// is exit 2 with one line per problem naming the file and line (where a file applies), and
// that no results or output directory was created.
func TestBadInput(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	emptyDS := write("empty.jsonl", "")
	badDS := write("bad.jsonl", `{"prompt": "hello there", "max_tokens": 8}`+"\n"+`{"prompt": "hi", "max_tokens": }`+"\n")
	notFile := write("not-a-dir", "x")
	csvMissing := write("missing.csv", "concurrency,qps\n1,2\n")
	csvCells := write("cells.csv", "concurrency,output_tps\n1,100\n2,150,7\n")
	csvNaN := write("nan.csv", "concurrency,output_tps\n1,100\n2,NaN\n")

	type tc struct {
		name string
		// config is the YAML file body ("" = no -c); $DS and $TMP are replaced.
		config string
		args   []string
		// want holds one entry per expected output line, in order: substrings of the line
		// joined by "&&"; "$CFG" is the config file's path.
		want []string
	}
	tests := []tc{
		{"malformed YAML", "name: x\nsweep:\n  warmup: 5s\n   duration: 1s\n", nil, []string{"$CFG:4: mapping values are not allowed"}},
		{"unclosed list", "sweep:\n  levels: [1, 2\n", nil, []string{"$CFG:1: did not find expected ','"}},
		{"tab indentation", "sweep:\n\twarmup: 5s\n", nil, []string{"$CFG:2: found character that cannot start any token"}},
		{"not a mapping", "- 1\n- 2\n", nil, []string{"$CFG:1: the configuration must be a mapping"}},
		{"unknown key", "sweep:\n  duraton: 5s\n", nil, []string{"$CFG:2: field duraton not found"}},
		{"unknown nested key", "target:\n  tls:\n    ca_flie: x\n", nil, []string{"$CFG:3: field ca_flie not found"}},
		{"wrong type", "sweep:\n  min_requests: many\n", nil, []string{"$CFG:2: && many"}},
		{"wrong type for a rate", "sweep:\n  stop:\n    max_error_rate: high\n", nil, []string{"$CFG:3: && high"}},
		{"zero level", "sweep:\n  levels: [0, 1]\n", nil, []string{"$CFG:2: sweep.levels: level 1 is 0"}},
		{"negative level", "sweep:\n  levels: [-4]\n", nil, []string{"$CFG:2: sweep.levels: level 1 is -4"}},
		{"decreasing levels", "sweep:\n  levels: [1, 4, 2]\n", nil, []string{"$CFG:2: sweep.levels: levels must increase"}},
		{"bad progression", "sweep:\n  levels: {start: 8, max: 4, factor: 2}\n", nil, []string{"$CFG:2: sweep.levels: max 4 is below start 8"}},
		{"duration without unit", "sweep:\n  warmup: 5\n", nil, []string{"$CFG:2: sweep.warmup: duration needs a unit"}},
		{"negative duration", "sweep:\n  cooldown: -1s\n", nil, []string{"$CFG:2: sweep.cooldown: is -1s"}},
		{"missing model", "target:\n  url: http://127.0.0.1:1/v1\n", nil, []string{"$CFG:2: target.model: missing"}},
		{"bad url", "target:\n  url: 127.0.0.1:8000\n  model: m\n", nil, []string{"$CFG:2: target.url:"}},
		{"bad distribution", "workload:\n  input_tokens: {dist: zipf, mean: 10}\n", nil, []string{"$CFG:2: workload.input_tokens.dist:"}},
		{"uniform without bounds", "workload:\n  output_tokens: {dist: uniform}\n", nil, []string{"$CFG:2: workload.output_tokens: uniform needs"}},
		{"every decoding problem at once", "sweep:\n  warmup: 5\n  levles: [2, 1]\ntarget:\n  api: [chat]\n",
			nil, []string{"$CFG:2: sweep.warmup", "$CFG:3: field levles not found", "$CFG:5: && api"}},
		{"every validation problem at once", "sweep:\n  cooldown: -1s\n  levels: [2, 1]\ntarget:\n  api: grpc\n",
			nil, []string{"$CFG:2: sweep.cooldown", "$CFG:3: sweep.levels", "$CFG:5: target.api"}},
		{"decoding and validation problems at once", "sweep:\n  warmup: 5\n  cooldown: -1s\ntarget:\n  api: grpc\n  modle: m\n",
			nil, []string{"$CFG:2: sweep.warmup", "$CFG:3: sweep.cooldown", "$CFG:5: target.api", "$CFG:6: field modle not found"}},
		{"file and flag problems at once", "sweep:\n  warmup: 5\n", []string{"--levels", "1,x"},
			[]string{"$CFG:2: sweep.warmup", `--levels: "x" is not an integer`}},
		{"unreadable dataset", "workload:\n  dataset: $TMP/nope.jsonl\n", nil, []string{"$CFG:2: workload.dataset: cannot read"}},
		{"dataset is a directory", "workload:\n  dataset: $TMP\n", nil, []string{"$CFG:2: workload.dataset: && is a directory"}},
		{"empty dataset", "workload:\n  dataset: " + emptyDS + "\n", nil, []string{emptyDS + ": empty file"}},
		{"malformed dataset line", "workload:\n  dataset: " + badDS + "\n", nil, []string{badDS + ":2:"}},
		{"missing config file", "", []string{"-c", filepath.Join(tmp, "nope.yaml")}, []string{"nope.yaml && no such file"}},
		{"bad level flag", "", []string{"--levels", "1,0"}, []string{"--levels: sweep.levels: level 2 is 0"}},
		{"output under a file", "", []string{"--levels", "1", "-o", filepath.Join(notFile, "run")}, []string{"results directory && not-a-dir"}},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(tmp, "read-only")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, tc{"read-only output parent", "", []string{"--levels", "1", "-o", filepath.Join(ro, "run")},
			[]string{"results directory && read-only"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := []string{"sweep"}
			cfg := ""
			if tt.config != "" {
				body := strings.NewReplacer("$TMP", tmp).Replace(tt.config)
				cfg = filepath.Join(t.TempDir(), "bad.yaml")
				if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-c", cfg)
			}
			args = append(args, tt.args...)
			if !strings.Contains(strings.Join(args, " "), " -o ") {
				args = append(args, "-o", out)
			}
			e, stdout, stderr := testEnv()
			err := run(context.Background(), e, args)
			if code := exitCode(err); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d\nstderr:\n%s", code, err, exitUsage, stderr)
			}
			lines := outputLines(stderr.String(), err)
			if len(lines) != len(tt.want) {
				t.Fatalf("%d output lines, want %d (one per problem):\n%s", len(lines), len(tt.want), strings.Join(lines, "\n"))
			}
			for i, w := range tt.want {
				for _, sub := range strings.Split(strings.ReplaceAll(w, "$CFG", cfg), " && ") {
					if !strings.Contains(lines[i], sub) {
						t.Errorf("line %d %q does not contain %q", i+1, lines[i], sub)
					}
				}
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout should be empty on a usage error: %q", stdout)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("bad input left %s behind (%v)", out, err)
			}
		})
	}

	// A level-summary CSV with problems: exit 2, one line naming FILE:LINE and the column,
	// and no output directory.
	for _, c := range []struct{ path, want string }{
		{csvMissing, csvMissing + ":1"},
		{csvCells, csvCells + ":3"},
		{csvNaN, csvNaN + ":3"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		e, _, stderr := testEnv()
		err := run(context.Background(), e, []string{"analyze", c.path, "-o", out})
		if code := exitCode(err); code != exitUsage {
			t.Errorf("analyze %s: exit %d (%v), want %d", c.path, code, err, exitUsage)
			continue
		}
		if lines := outputLines(stderr.String(), err); len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("analyze %s: output %q, want one line naming %s", c.path, lines, c.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("analyze %s: a bad CSV left %s behind", c.path, out)
		}
	}
}

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
// counts the classes in analysis.json and prints them in the report.
func TestFaultSweepStopsOnErrorRate(t *testing.T) {
	f := &faultyServer{}
	srv := startFaulty(t, f, false)
	cfg := writeTestConfig(t, fmt.Sprintf(`name: faulty
target: {url: %s/v1, model: %s, request_timeout: 2s}
workload: {input_tokens: {mean: 8}, output_tokens: {mean: 8}}
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
	classes := map[sweep.ErrorClass]int{}
	for _, r := range res.Records() {
		if !r.OK() {
			classes[r.ErrorClass]++
		}
	}
	// The server's own count of faults is the reference: one record per fault (the +1 is
	// the preflight probe, which is not a record).
	nFaults := int(f.faults.Load())
	if got := classes[sweep.ErrHTTP5xx] + classes[sweep.ErrHTTP429] + classes[sweep.ErrStreamBroken]; got != nFaults || len(classes) != 3 {
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
	for _, c := range []sweep.ErrorClass{sweep.ErrHTTP5xx, sweep.ErrHTTP429, sweep.ErrStreamBroken} {
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
