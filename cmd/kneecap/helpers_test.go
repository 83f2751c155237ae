package main

// Helpers of every test of the command: an env writing to buffers, config files, the JSON
// the commands write, and the lines a failed command printed.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func analyzeEnv() (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, interrupt: context.Background()}, &out, &errb
}

// readJSON decodes dir/analysis.json into a generic map.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// dig follows keys through nested objects.
func dig(m map[string]any, keys ...string) (any, bool) {
	var v any = m
	for _, k := range keys {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// outputLines returns the non-empty lines a failed command printed: stderr, then what main
// prints of the error (printError: the message, and "see kneecap CMD -h" after a
// command-line error; nothing for a bare exit code).
func outputLines(stderr string, err error) []string {
	var msg strings.Builder
	printError(&msg, err)
	var lines []string
	for _, l := range strings.Split(stderr+"\n"+msg.String(), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
