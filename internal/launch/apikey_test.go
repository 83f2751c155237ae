package launch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
)

// TestPreflightDiagnostics: the preflight's refusals say what to check, with exit 3 (design
// §9.2: an HTTP error at the preflight is the target unreachable). A URL without /v1 gets a
// 404 and the URL with /v1; a 401 says whether a key was sent and from which variable, by
// name — never the key; a variable named by --api-key-env that holds nothing is warned of
// before the preflight, the API's default one is not, even named.
func TestPreflightDiagnostics(t *testing.T) {
	t.Parallel()
	const key = "sk-diag-SECRET-0002"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !strings.HasPrefix(r.URL.Path, "/v1/"):
			w.WriteHeader(404)
			io.WriteString(w, "404 page not found")
		case r.Header.Get("Authorization") != "Bearer right":
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_api_key","code":401}}`)
		}
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, url string
		env       map[string]string
		flag      string // --api-key-env, "" for the default variable
		want      []string
		warn      bool
	}{
		{"no /v1", srv.URL, nil, "", []string{"http_4xx", "status code: 404", "404 for POST /chat/completions: did you mean " + srv.URL + "/v1?"}, false},
		{"default variable unset", srv.URL + "/v1", nil, "",
			[]string{"no API key was sent: $OPENAI_API_KEY (target.api_key_env's default for api chat) is unset or empty"}, false},
		{"default variable named", srv.URL + "/v1", nil, "OPENAI_API_KEY",
			[]string{"no API key was sent: $OPENAI_API_KEY (--api-key-env) is unset or empty"}, false},
		{"named variable unset", srv.URL + "/v1", nil, "MY_KEY", []string{"no API key was sent: $MY_KEY (--api-key-env) is unset or empty"}, true},
		{"key refused", srv.URL + "/v1", map[string]string{"MY_KEY": key}, "MY_KEY",
			[]string{"the server refused the credentials sent: the API key from $MY_KEY (--api-key-env) (as Authorization: Bearer)"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Target.URL, cfg.Target.Model = tc.url, "m"
			if tc.flag != "" {
				cfg.Target.APIKeyEnv = tc.flag
				cfg.Override("target.api_key_env", "--api-key-env")
			}
			var stderr bytes.Buffer
			s := &Sweep{Env: Env{Log: &stderr, Getenv: func(k string) string { return tc.env[k] }}, Cfg: cfg, Levels: []int{1}}
			tg, err := s.startTarget()
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			warned := stderr.String()
			_, err = s.preflight(context.Background(), tg)
			if exit.Code(err) != exit.Unreachable {
				t.Fatalf("exit %d (%v), want %d", exit.Code(err), err, exit.Unreachable)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error()+stderr.String(), key) {
				t.Errorf("the key is printed:\n%v\n%s", err, stderr.String())
			}
			wantWarn := "kneecap: warning: $MY_KEY (--api-key-env) is unset or empty: no API key will be sent to " + tc.url
			if got := strings.Contains(warned, "kneecap: warning:"); got != tc.warn || (got && !strings.Contains(warned, wantWarn)) {
				t.Errorf("warned before the preflight %v, want %v:\n%s", got, tc.warn, warned)
			}
		})
	}
}

// TestKeyForKeyEnvRefused: a key given by mistake as --api-key-env's variable name is refused
// (exit 2) before the results directory exists, so it reaches neither config.yaml nor the
// console, the warning of an unset variable included.
func TestKeyForKeyEnvRefused(t *testing.T) {
	t.Parallel()
	const key = "sk-proj-SECRET-0003"
	cfg := config.Default()
	cfg.Target.URL, cfg.Target.Model, cfg.Target.APIKeyEnv = "http://127.0.0.1:1/v1", "m", key
	cfg.Override("target.api_key_env", "--api-key-env")
	cfg.Output.Dir = filepath.Join(t.TempDir(), "run")
	var stderr bytes.Buffer
	_, err := New(Env{Log: &stderr, Getenv: func(string) string { return "" }}, cfg, "")
	if exit.Code(err) != exit.Usage {
		t.Fatalf("exit %d (%v), want %d", exit.Code(err), err, exit.Usage)
	}
	if out := stderr.String(); !strings.Contains(out, "--api-key-env: target.api_key_env: not an environment variable's name") || strings.Contains(out+err.Error(), key) {
		t.Errorf("stderr %q, error %v: want the refusal without the key", out, err)
	}
	if _, err := os.Stat(cfg.Output.Dir); !os.IsNotExist(err) {
		t.Errorf("results directory: %v, want none", err)
	}
}
