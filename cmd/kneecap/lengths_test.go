package main

// Lengths through the CLI (DESIGN §4.14): a sweep against an API that ignores ignore_eos and
// min_tokens gets a warning with the output lengths it produced, not a silent change of
// workload.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/sim"
)

// ignoringAPI serves the simulator as an OpenAI-style API does: it drops ignore_eos and
// min_tokens from every request body, so outputs end where the model stops.
func ignoringAPI(t *testing.T, cfg sim.Config) *httptest.Server {
	t.Helper()
	rc, err := sim.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.NewServer(rc)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			var body map[string]any
			b, _ := io.ReadAll(r.Body)
			if json.Unmarshal(b, &body) == nil {
				delete(body, "ignore_eos")
				delete(body, "min_tokens")
				b, _ = json.Marshal(body)
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv
}

// TestSweepFixedOutputIgnored: fixed_output asks for 64 tokens; the API drops ignore_eos and
// min_tokens and the simulator's outputs end at a geometric length of mean 16 (an
// end-of-sequence probability of 1/16 per token), capped at 64: mean 16 × (1 − (15/16)^64) ≈
// 15.7 tokens. Every level is named in one warning with its distribution against the 64
// requested; the prompts, counted as sent (the simulator counts words), get none.
func TestSweepFixedOutputIgnored(t *testing.T) {
	t.Parallel()
	srv := ignoringAPI(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 5 * time.Millisecond, ITL: time.Millisecond,
		OutputTokens: 16, OutputDist: sim.OutputGeometric})
	cfg := writeTestConfig(t, fmt.Sprintf(`name: ignored
target: {url: %s/v1, model: %s, request_timeout: 5s}
workload: {input_tokens: {dist: fixed, mean: 16}, output_tokens: {dist: fixed, mean: 64}, fixed_output: true}
sweep:
  levels: [1, 2]
  warmup: 50ms
  duration: 500ms
  min_requests: 10
  max_duration: 1s
  drain_timeout: 2s
  retry_excluded: 0 # not under test here: no level run again (TestRetryExcluded's)
`, srv.URL, sim.DefaultModel))
	dir := filepath.Join(t.TempDir(), "run")
	e, stdout, stderr := testEnv()
	if err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", dir, "--wide"}); err != nil {
		t.Fatalf("sweep: %v\n%s", err, stderr)
	}
	m := readJSON(t, filepath.Join(dir, "analysis.json"))
	warnings := fmt.Sprint(m["warnings"])
	if !strings.Contains(warnings, "output length: fixed_output asked for exactly max_tokens (with ignore_eos and min_tokens), but the outputs were more than 5% off it at concurrency 1 (mean ") ||
		!strings.Contains(warnings, "vs 64 requested), 2 (mean ") || !strings.Contains(warnings, "the server ignores those parameters") {
		t.Errorf("warnings lack the ignored fixed output naming levels 1 and 2: %s", warnings)
	}
	if strings.Contains(warnings, "prompt length") {
		t.Errorf("prompts were counted as requested: %s", warnings)
	}
	levels, _ := m["levels"].([]any)
	for _, l := range levels {
		lv := l.(map[string]any)
		out, _ := lv["output_tokens"].(map[string]any)
		in, _ := lv["input_tokens"].(map[string]any)
		mean, _ := out["mean"].(float64)
		if out["requested"] != 64.0 || mean < 10 || mean > 22 || lv["fixed_output"] != true || in["mean"] != 16.0 || in["requested"] != 16.0 {
			t.Errorf("level %v: input %v, output %v (want a mean near 15.7 of 64 requested), fixed %v", lv["concurrency"], in, out, lv["fixed_output"])
		}
	}
	if !strings.Contains(stdout.String(), "≠64") {
		t.Errorf("console level table (--wide) lacks the request beside the outputs:\n%s", stdout)
	}
}
