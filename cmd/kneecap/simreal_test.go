package main

// `kneecap sim`'s real-engine keys and flags: the tokenizer rule, the chat template, closing
// after each stream.

import (
	"context"
	"strings"
	"testing"
)

// TestSimRealEngineKeys: the file's real-engine keys reach the engine, flags override them
// exactly, the banner names the modes that differ from the defaults, and a bad value is a
// problem naming the key, exit 2.
func TestSimRealEngineKeys(t *testing.T) {
	cfg := writeTestConfig(t, `simulator:
  tokenizer: subword
  chat_template_tokens: 40
`)
	e, stderr := simEnv()
	if err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0", "-c", cfg, "--chat-template-tokens", "12",
		"--close-after-stream"}); err != nil {
		t.Fatalf("sim: %v\n%s", err, stderr)
	}
	for _, want := range []string{"tokenizer=subword", "chat_template_tokens=12", "close_after_stream"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, stderr)
		}
	}
	e, stderr = simEnv()
	if err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0"}); err != nil {
		t.Fatalf("sim: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr.String(), "tokenizer=") || strings.Contains(stderr.String(), "chat_template_tokens") ||
		strings.Contains(stderr.String(), "close_after_stream") {
		t.Errorf("default banner names default modes:\n%s", stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tokenizer", "bpe"}, `sim: tokenizer: "bpe" is not words or subword`},
		{[]string{"--chat-template-tokens", "-1"}, "sim: chat_template_tokens: -1 must be ≥ 0"},
	} {
		e, stderr := simEnv()
		err := run(context.Background(), e, append([]string{"sim", "--addr", "127.0.0.1:0"}, tc.args...))
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d\n%s", tc.args, code, err, exitUsage, stderr)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr lacks %q:\n%s", tc.args, tc.want, stderr)
		}
	}
}
