//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// countingServer answers every request 500 and counts them: a refusal "before anything is
// sent" leaves it at 0.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "counting server", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// limitedEnv, when set, makes TestLimitedChild the child process: its value is the
// RLIMIT_NOFILE to run `kneecap` under, and limitedArgs holds the arguments (JSON).
const (
	limitedEnv  = "KNEECAP_TEST_NOFILE"
	limitedArgs = "KNEECAP_TEST_ARGS"
)

// runLimited runs `kneecap ARGS...` in a child process (this test binary) whose soft and hard
// RLIMIT_NOFILE are nofile, never lowering the test process's own, and returns its exit code
// and stderr.
func runLimited(t *testing.T, nofile uint64, args ...string) (int, string) {
	t.Helper()
	js, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLimitedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), limitedEnv+"="+strconv.FormatUint(nofile, 10), limitedArgs+"="+string(js),
		"OPENAI_BASE_URL=", "OPENAI_API_KEY=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	code, rest, ok := bytes.Cut(out, []byte("\n"))
	stderr, _, ended := bytes.Cut(rest, []byte(childEnd))
	c, err := strconv.Atoi(strings.TrimPrefix(string(code), "exit "))
	if !ok || !ended || err != nil {
		t.Fatalf("child printed no exit code:\n%s", out)
	}
	return c, string(stderr)
}

// TestLimitedChild is the child of runLimited (skipped otherwise): it lowers its RLIMIT_NOFILE,
// runs kneecap, and prints "exit N" and kneecap's stderr.
func TestLimitedChild(t *testing.T) {
	v := os.Getenv(limitedEnv)
	if v == "" {
		t.Skip("the child process of runLimited")
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(limitedArgs)), &args); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
		t.Fatal(err)
	}
	e, _, stderr := testEnv()
	err = run(context.Background(), e, args)
	if err != nil && exitCode(err) != exitUsage {
		fmt.Fprintln(stderr, "kneecap: "+err.Error())
	}
	fmt.Printf("exit %d\n%s%s", exitCode(err), stderr, childEnd)
}

// childEnd ends kneecap's stderr in the output of TestLimitedChild (the test framework's lines
// follow).
const childEnd = "--- end of kneecap's stderr ---\n"

// TestSweepClientLimits checks the limits of the load generator before a level starts: a level
// past the most workers one process runs, or past the file descriptors it may open (in a
// child process with RLIMIT_NOFILE lowered to 300), is refused with one line naming the limit
// and the fix, exit 2, before any request reaches the server and without a results
// directory; a plan that fits runs under the same limit.
func TestSweepClientLimits(t *testing.T) {
	t.Parallel()
	srv, sent := countingServer(t)
	url := srv.URL + "/v1"
	for _, tc := range []struct {
		name   string
		nofile uint64 // 0: in this process, unchanged
		levels string
		want   string
	}{
		{"maximum level", 0, "1,1000000000",
			"kneecap: sweep: client limit: concurrency 1000000000 is more than the 100000 workers one process runs: lower sweep.levels, or split the level over processes with --shard I/N"},
		{"descriptors", 300, "1,8000",
			"kneecap: sweep: client limit: concurrency 8000 needs about 80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			args := []string{"sweep", "--url", url, "--model", "m", "--levels", tc.levels, "-o", dir}
			var code int
			var stderr string
			if tc.nofile == 0 {
				r := runCmd(nil, args...)
				code, stderr = exitCode(r.err), r.stderr
			} else {
				code, stderr = runLimited(t, tc.nofile, args...)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != exitUsage || len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and one line starting %q", code, stderr, tc.want)
			}
			if tc.nofile > 0 {
				for _, w := range []string{"more than its limit of 300 (RLIMIT_NOFILE)", "ulimit -n 80"} {
					if !strings.Contains(lines[0], w) {
						t.Errorf("%s\nwant it to name %q", lines[0], w)
					}
				}
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("results directory: %v, want none", err)
			}
		})
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("the server received %d requests, want none", n)
	}
	// A plan that fits runs under the same limit (the in-process simulator: two descriptors a
	// worker).
	cfg := writeTestConfig(t, `name: fits
sweep: {levels: [1, 4], warmup: 50ms, duration: 300ms, min_requests: 5, max_duration: 300ms}
simulator: {profile: fixed, ttft: 5ms, itl: 1ms, output_tokens: 8}
`)
	code, stderr := runLimited(t, 300, "sweep", "-c", cfg, "-o", filepath.Join(t.TempDir(), "run"))
	if code != exitOK || strings.Contains(stderr, "client limit") {
		t.Errorf("a plan that fits: exit %d\n%s", code, stderr)
	}
}
