package main

// Secrets and TLS (DESIGN §7): the API key comes only from the environment variable the
// config names and appears in no file, log line or error message, even when the server
// echoes it back; a custom CA file works; an untrusted certificate is a clear error; turning
// verification off is warned about loudly.

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
)

// testKey is the API key of the secrets test: it must never be written anywhere.
const testKey = "sk-test-SECRET"

// TestSecretsNeverWritten sweeps a server that requires the key, rejects anything else with
// the bad key in its body, and echoes the key in the error bodies of a third of the
// requests. Then it analyzes the run and greps every file of the results directory, and
// stdout and stderr of both commands, for the key.
func TestSecretsNeverWritten(t *testing.T) {
	t.Parallel()
	f := &faultyServer{auth: testKey}
	srv := startFaulty(t, f, false)
	cfg := writeTestConfig(t, fmt.Sprintf(`name: secrets
target:
  url: %s/v1
  model: %s
  api_key_env: KNEECAP_TEST_KEY
  request_timeout: 2s
  extra_body: {api_key: %s, temperature: 0}
workload: {input_tokens: {mean: 8}, output_tokens: {mean: 8}}
sweep:
  levels: [1, 2]
  warmup: 50ms
  duration: 300ms
  min_requests: 3
  max_duration: 300ms
  drain_timeout: 2s
  stop: {max_error_rate: 1}
  retry_excluded: 0 # not under test here: no level run again (TestRetryExcluded's)
`, srv.URL, sim.DefaultModel, testKey))
	dir := filepath.Join(t.TempDir(), "run")
	e, stdout, stderr := testEnv()
	e.getenv = func(k string) string {
		if k == "KNEECAP_TEST_KEY" {
			return testKey
		}
		return ""
	}
	if err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", dir}); err != nil {
		t.Fatalf("sweep: %v\n%s", err, stderr)
	}
	if !f.seen.Load() {
		t.Fatal("the server never saw the key: the test proves nothing")
	}
	if b, err := os.ReadFile(filepath.Join(dir, rundir.ServerInfoFile)); err != nil || !strings.Contains(string(b), "max_running_requests") {
		t.Errorf("%s does not hold the server's info (%v): its redaction is untested", rundir.ServerInfoFile, err)
	}
	e2, stdout2, stderr2 := testEnv()
	if err := run(context.Background(), e2, []string{"analyze", dir, "--bootstrap", "0"}); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr2)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	echoed := 0
	for _, r := range res.Records() {
		if strings.Contains(r.Error, "[REDACTED]") {
			echoed++
		}
	}
	if echoed == 0 {
		t.Error("no record carries the server's echo of the key (redacted): the echo path is untested")
	}
	files := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(testKey)) {
			t.Errorf("%s contains the API key", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 8 {
		t.Errorf("only %d files in the results directory: the grep covered too little", files)
	}
	for name, out := range map[string]string{"sweep stdout": stdout.String(), "sweep stderr": stderr.String(),
		"analyze stdout": stdout2.String(), "analyze stderr": stderr2.String()} {
		if strings.Contains(out, testKey) {
			t.Errorf("%s contains the API key", name)
		}
	}
}

// TestSecretsKeyOnlyFromEnv: a key in the config file is not a key; the run goes out without
// one (the server says 401 and the preflight fails with exit 3), and the message does not
// repeat it.
func TestSecretsKeyOnlyFromEnv(t *testing.T) {
	f := &faultyServer{auth: testKey}
	srv := startFaulty(t, f, false)
	cfg := writeTestConfig(t, fmt.Sprintf("target: {url: %s/v1, model: %s, api_key_env: UNSET_VAR}\nsweep: {levels: [1]}\n", srv.URL, sim.DefaultModel))
	e, _, stderr := testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", filepath.Join(t.TempDir(), "run")})
	if code := exitCode(err); code != exitUnreachable || !strings.Contains(errString(err), "http_4xx") {
		t.Fatalf("exit %d (%v), want %d with http_4xx\n%s", code, err, exitUnreachable, stderr)
	}
	if f.seen.Load() {
		t.Error("the server accepted a key that no environment variable held")
	}
}

// writeCA writes the test server's certificate as a PEM file.
func writeCA(t *testing.T, der []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLS sweeps an HTTPS server with a self-signed certificate: trusted through ca_file it
// works; without it the preflight fails with exit 3 and a message naming the certificate
// problem; with insecure_skip_verify it works and stderr carries a loud warning.
func TestTLS(t *testing.T) {
	t.Parallel()
	// A fresh server per case: faultyServer's fault schedule starts with a good preflight.
	config := func(t *testing.T, tls func(ca string) string) string {
		srv := startFaulty(t, &faultyServer{}, true)
		ca := writeCA(t, srv.Certificate().Raw)
		return writeTestConfig(t, fmt.Sprintf(`target: {url: %s/v1, model: %s, request_timeout: 5s, tls: {%s}}
workload: {input_tokens: {mean: 8}, output_tokens: {mean: 8}}
sweep: {levels: [1], warmup: 20ms, duration: 200ms, min_requests: 1, max_duration: 200ms, stop: {max_error_rate: 1}}
`, srv.URL, sim.DefaultModel, tls(ca)))
	}
	for _, tc := range []struct {
		name string
		tls  func(ca string) string
		code int
		want string // in stderr or the error
	}{
		{"ca_file", func(ca string) string { return "ca_file: " + ca }, exitOK, "preflight ok"},
		{"untrusted", func(string) string { return "" }, exitUnreachable, "certificate"},
		{"insecure_skip_verify", func(string) string { return "insecure_skip_verify: true" }, exitOK, "WARNING: TLS certificate verification is off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config(t, tc.tls)
			e, _, stderr := testEnv()
			err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", filepath.Join(t.TempDir(), "run")})
			if code := exitCode(err); code != tc.code {
				t.Fatalf("exit %d (%v), want %d\n%s", code, err, tc.code, stderr)
			}
			if out := stderr.String() + errString(err); !strings.Contains(out, tc.want) {
				t.Errorf("output does not contain %q:\n%s", tc.want, out)
			}
			if tc.code != exitOK && strings.Contains(errString(err), "\n") {
				t.Errorf("error is not one line: %q", errString(err))
			}
		})
	}
	// A CA file that holds no certificate is a usage error, not a silent fallback.
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config(t, func(string) string { return "ca_file: " + bad })
	e, _, _ := testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", cfg, "-o", filepath.Join(t.TempDir(), "run")})
	if code := exitCode(err); code != exitUsage || !strings.Contains(errString(err), "no PEM certificates") {
		t.Errorf("bad ca_file: exit %d (%v), want %d naming the file's problem", code, err, exitUsage)
	}
}

// TestHeaderRefusals: an Authorization header beside an API key, and a bad header of the
// config file (at its FILE:LINE), are exit 2 in one line that repeats no value; nothing is
// sent or written.
func TestHeaderRefusals(t *testing.T) {
	f := &faultyServer{auth: testKey}
	srv := startFaulty(t, f, false)
	withKey := func(e *env) {
		e.getenv = func(k string) string {
			if k == "KNEECAP_TEST_KEY" {
				return testKey
			}
			return ""
		}
	}
	bad := writeTestConfig(t, fmt.Sprintf("target:\n  url: %s/v1\n  model: m\n  headers:\n    Host: sk-SECRET-host\n", srv.URL))
	for _, tc := range []struct {
		name  string
		setup func(*env)
		args  []string
		want  string
	}{
		{"Authorization beside the key", withKey,
			[]string{"--url", srv.URL + "/v1", "--model", "m", "--api-key-env", "KNEECAP_TEST_KEY", "--header", "Authorization: Token sk-SECRET-2"},
			"sweep: --header Authorization (or target.headers) and the API key in $KNEECAP_TEST_KEY (target.api_key_env) both authenticate: give one (--api-key-env '' sends no key)"},
		{"bad header in the file", nil, []string{"-c", bad},
			"sweep: " + bad + ":5: target.headers.Host: header Host: cannot be set (net/http sets it from the URL)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			r := runCmd(tc.setup, append(append([]string{"sweep"}, tc.args...), "-o", out)...)
			if code := exitCode(r.err); code != exitUsage {
				t.Fatalf("exit %d (%v), want %d\n%s", code, r.err, exitUsage, r.stderr)
			}
			lines := outputLines(r.stderr, r.err)
			if len(lines) != 1 || lines[0] != "kneecap: "+tc.want {
				t.Errorf("output %q, want the one line %q", lines, tc.want)
			}
			if all := strings.Join(lines, "\n"); strings.Contains(all, "SECRET") {
				t.Errorf("output %q repeats a value", all)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused sweep left %s behind", out)
			}
		})
	}
	if f.n.Load() != 0 {
		t.Errorf("the server received %d requests from refused sweeps", f.n.Load())
	}
}

// TestResumeNeedsSecretHeaders: --resume of a run whose config.yaml holds a secret header as
// REDACTED is refused unless --header gives it again.
func TestResumeNeedsSecretHeaders(t *testing.T) {
	cfg := config.Default()
	cfg.Target.Headers = map[string]string{"X-Tenant": "acme", "x-api-key": "xk-1"}
	cfg = cfg.Redacted()
	err := launch.RedactedHeaders("runs/r", cfg)
	if err == nil || !strings.Contains(err.Error(), "config.yaml holds header x-api-key as REDACTED: give it again with --header 'x-api-key:VALUE'") {
		t.Fatalf("redacted header: %v", err)
	}
	var l headerList
	if err := l.Set("X-API-KEY: xk-2"); err != nil {
		t.Fatal(err)
	}
	l.apply(&cfg)
	if err := launch.RedactedHeaders("runs/r", cfg); err != nil {
		t.Errorf("given again: %v", err)
	}
	if h := cfg.Target.HTTPHeader(); h.Get("X-Api-Key") != "xk-2" || h.Get("X-Tenant") != "acme" || len(h) != 2 {
		t.Errorf("headers after --header: %v", h)
	}
}
