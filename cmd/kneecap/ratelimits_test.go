//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRateClientLimits: a rate sweep whose cap on requests in flight the process cannot
// carry (RLIMIT_NOFILE 300) is refused, when the user set the cap, with one line naming
// sweep.max_concurrency and --max-concurrency (not a concurrency sweep's sweep.levels or
// --shard), exit 2, nothing sent and no results directory; left at its default (4,096), the
// cap is lowered to what the limit allows, the console says so, and the sweep runs.
func TestRateClientLimits(t *testing.T) {
	t.Parallel()
	srv, sent := countingServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, stderr := runLimited(t, 300, "sweep", "--url", srv.URL+"/v1", "--model", "m", "--rates", "1", "--max-concurrency", "8000", "-o", dir)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	want := "kneecap: sweep: client limit: max_concurrency 8000 (a rate level's cap on requests in flight) needs about 80"
	if code != exitUsage || len(lines) != 1 || !strings.HasPrefix(lines[0], want) ||
		!strings.HasSuffix(lines[0], ", or lower sweep.max_concurrency (--max-concurrency)") || strings.Contains(lines[0], "--shard") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and one line starting %q, ending with the --max-concurrency advice", code, stderr, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) || sent.Load() != 0 {
		t.Errorf("results directory: %v, %d requests sent: want none", err, sent.Load())
	}
	cfg := writeTestConfig(t, `name: defaultcap
sweep: {warmup: 50ms, duration: 300ms, min_requests: 3, max_duration: 600ms, stop: {max_unsustainable: 1}, retry_excluded: 0}
simulator: {profile: fixed, ttft: 5ms, itl: 1ms, output_tokens: 8}
`)
	code, stderr = runLimited(t, 300, "sweep", "-c", cfg, "--rates", "20", "-o", filepath.Join(t.TempDir(), "run"))
	note := "(sweep.max_concurrency), not the default 4096, which needs more file descriptors (RLIMIT_NOFILE 300) than this process has; set --max-concurrency to choose"
	if code != exitOK || !strings.Contains(stderr, "kneecap: rate sweep: at most ") || !strings.Contains(stderr, note) {
		t.Errorf("default cap under RLIMIT_NOFILE 300: exit %d\n%s\nwant exit 0 and the note %q", code, stderr, note)
	}
}
