package main

// One redaction for every URL and message (DESIGN §7): a key in the URL's userinfo, in its
// query or in the environment, echoed by the server as it is or base64-encoded (Basic
// credential, "Bearer KEY"), appears in no file a sweep writes and in nothing it prints.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
)

// leakKey is the secret of these tests: '/' and '+' change under percent-encoding, and
// base64 of it, of "Bearer " + it and of "user:" + it differ from one another.
const leakKey = "sk-T0p/S3cret+Key=42xyz"

// keyForms is every form of leakKey the tests grep for.
func keyForms() []string {
	out := []string{leakKey, url.QueryEscape(leakKey), url.PathEscape(leakKey), url.UserPassword("user", leakKey).String()}
	for _, p := range []string{leakKey, "Bearer " + leakKey, "user:" + leakKey} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(p)))
		}
	}
	return out
}

// echoServer serves the fixed-mode simulator, but echoes the Authorization header it gets
// (else the X-Api-Key header, a custom --header),
// as it is and base64-encoded, in its /version body, in the HTTP 500 body of every third chat
// request after the preflight and in the stream error of every third (one content chunk,
// then an error object).
type echoServer struct {
	sim    *sim.Server
	n      atomic.Int64
	echoes atomic.Int64
}

func startEcho(t *testing.T) (*httptest.Server, *echoServer) {
	t.Helper()
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	s := &echoServer{}
	if s.sim, err = sim.NewServer(cfg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); s.sim.Close() })
	return srv, s
}

func (s *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		auth = r.Header.Get("X-Api-Key")
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(auth))
	if r.URL.Path == "/version" {
		fmt.Fprintf(w, `{"version":"0.1","debug":"Authorization: %s, %s"}`, auth, b64)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		s.sim.ServeHTTP(w, r)
		return
	}
	n := s.n.Add(1) - 1
	if n == 0 || n%3 == 0 || auth == "" {
		s.sim.ServeHTTP(w, r)
		return
	}
	s.echoes.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	if n%3 == 1 {
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":{"message":"engine crashed for %s (%s)","code":500}}`, auth, b64)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
	fmt.Fprintf(w, "data: {\"error\":{\"message\":\"denied %s\",\"code\":500}}\n\n", b64)
}

// grepKey fails the test for every form of leakKey in the files under dir (if any) and in
// the outputs.
func grepKey(t *testing.T, dir string, outputs map[string]string) {
	t.Helper()
	forms := keyForms()
	check := func(where string, b []byte) {
		for _, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				t.Errorf("%s holds the key as %q", where, f)
			}
		}
	}
	for name, out := range outputs {
		check(name, []byte(out))
	}
	if dir == "" {
		return
	}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		check(path, b)
		return err
	})
	if err != nil || files < 8 {
		t.Errorf("%d files under %s (%v): the grep covered too little", files, dir, err)
	}
}

// TestKeyNeverLeaks sweeps the echo server with the key in the URL's userinfo (sent as a
// Basic credential), in the environment (sent as "Bearer KEY"), and in a custom header
// (--header Authorization, --header X-Api-Key, target.headers in the file), then analyzes
// the first run: no file (config.yaml included) and no output holds any form of the key, and
// the records say where the server's echoes were.
func TestKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	cfg := writeTestConfig(t, `target: {model: `+sim.DefaultModel+`, api_key_env: KNEECAP_LEAK_KEY, request_timeout: 2s}
workload: {input_tokens: {mean: 8}, output_tokens: {mean: 8}}
sweep: {levels: [1, 2], warmup: 50ms, duration: 300ms, min_requests: 3, max_duration: 300ms, drain_timeout: 2s, stop: {max_error_rate: 1}}
`)
	fileHeader := writeTestConfig(t, `target: {model: `+sim.DefaultModel+`, request_timeout: 2s, headers: {X-Api-Key: "`+leakKey+`"}}
workload: {input_tokens: {mean: 8}, output_tokens: {mean: 8}}
sweep: {levels: [1, 2], warmup: 50ms, duration: 300ms, min_requests: 3, max_duration: 300ms, drain_timeout: 2s, stop: {max_error_rate: 1}}
`)
	same := func(base string) string { return base }
	for _, tc := range []struct {
		name, key string // key: the environment variable's value
		url       func(base string) string
		cfg       string   // "": cfg
		args      []string // more flags
	}{
		{"userinfo", "", func(base string) string {
			return strings.Replace(base, "://", "://"+url.UserPassword("user", leakKey).String()+"@", 1)
		}, "", nil},
		{"environment", leakKey, same, "", nil},
		{"header Authorization", "", same, "", []string{"--header", "Authorization: Bearer " + leakKey}},
		{"header X-Api-Key", "", same, "", []string{"--header", "x-api-key:" + leakKey}},
		{"header in the file", "", same, fileHeader, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, echo := startEcho(t)
			dir := filepath.Join(t.TempDir(), "run")
			setup := func(e *env) {
				e.getenv = func(k string) string {
					if k == "KNEECAP_LEAK_KEY" {
						return tc.key
					}
					return ""
				}
			}
			file := cfg
			if tc.cfg != "" {
				file = tc.cfg
			}
			sw := runCmd(setup, append([]string{"sweep", "-c", file, "--url", tc.url(srv.URL + "/v1"), "-o", dir}, tc.args...)...)
			if sw.err != nil {
				t.Fatalf("sweep: %v\n%s", sw.err, sw.stderr)
			}
			res, err := rundir.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			marked := 0
			for _, r := range res.Records() {
				if strings.Contains(r.Error, redact.Marker) {
					marked++
				}
			}
			if marked == 0 {
				t.Errorf("no record shows a redacted echo (the server echoed %d times): the echo path is untested", echo.echoes.Load())
			}
			outputs := map[string]string{"sweep stdout": sw.stdout, "sweep stderr": sw.stderr}
			if tc.name == "userinfo" || tc.name == "header in the file" {
				an := runCmd(setup, "analyze", dir, "--bootstrap", "0")
				if an.err != nil {
					t.Fatalf("analyze: %v\n%s", an.err, an.stderr)
				}
				outputs["analyze stdout"], outputs["analyze stderr"] = an.stdout, an.stderr
			}
			grepKey(t, dir, outputs)
		})
	}
}

// TestKeyNeverLeaksRefused: a URL that the preflight cannot reach (the key as password or as
// the lone user name), or that configuration refuses (the key in its query; whitespace
// after it), is named without any form of the key, exit 3 or 2, and nothing is written.
func TestKeyNeverLeaksRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, url string
		code      int
		want      string
	}{
		{"password", "http://" + url.UserPassword("user", leakKey).String() + "@" + dead + "/v1", exitUnreachable, "preflight: http://" + dead + "/v1: connect"},
		{"user name", "http://" + url.User(leakKey).String() + "@" + dead + "/v1", exitUnreachable, "preflight: http://" + dead + "/v1: connect"},
		{"query", "http://" + dead + "/v1?api_key=" + url.QueryEscape(leakKey), exitUsage, `--url: target.url: "http://` + dead + `/v1" followed by a query string`},
		{"whitespace", "http://" + url.UserPassword("user", leakKey).String() + "@" + dead + "/v1 ", exitUsage, `--url: target.url: "http://` + dead + `/v1" has whitespace before or after it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			r := runCmd(nil, "sweep", "--url", tc.url, "--model", "m", "--levels", "1", "-o", out)
			if code := exitCode(r.err); code != tc.code {
				t.Fatalf("exit %d (%v), want %d\n%s", code, r.err, tc.code, r.stderr)
			}
			lines := outputLines(r.stderr, r.err)
			if !strings.Contains(strings.Join(lines, "\n"), tc.want) {
				t.Errorf("output %q lacks %q", lines, tc.want)
			}
			grepKey(t, "", map[string]string{"stderr and error": strings.Join(lines, "\n"), "stdout": r.stdout})
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused sweep left %s behind", out)
			}
		})
	}
}
