package main

// `kneecap sim`'s real-engine keys and flags: the tokenizer rule, the chat template, closing
// after each stream, usage that lies, reasoning, prefix caching.

import (
	"context"
	"strings"
	"testing"
)

// TestSimRealEngineKeys: the file's real-engine keys reach the engine, flags override them
// exactly, the banner names the modes that differ from the defaults, and a bad value is a
// problem naming the key (and, in a file, its FILE:LINE), exit 2.
func TestSimRealEngineKeys(t *testing.T) {
	cfg := writeTestConfig(t, `simulator:
  tokenizer: subword
  chat_template_tokens: 40
  prefix_caching: true
  faults: {usage_completion_tokens: 1e12}
`)
	e, stderr := simEnv()
	if err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0", "-c", cfg, "--chat-template-tokens", "12",
		"--close-after-stream", "--reasoning-tokens", "16", "--block-size", "32", "--prefix-cache-blocks", "100"}); err != nil {
		t.Fatalf("sim: %v\n%s", err, stderr)
	}
	for _, want := range []string{"tokenizer=subword", "chat_template_tokens=12", "close_after_stream",
		"reasoning_tokens=16", "prefix_caching(block_size=32 blocks=100)", "faults={usage_completion_tokens=1000000000000}"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, stderr)
		}
	}
	e, stderr = simEnv()
	if err := run(context.Background(), e, []string{"sim", "--addr", "127.0.0.1:0"}); err != nil {
		t.Fatalf("sim: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr.String(), "tokenizer=") || strings.Contains(stderr.String(), "chat_template_tokens") ||
		strings.Contains(stderr.String(), "close_after_stream") || strings.Contains(stderr.String(), "reasoning_tokens") || strings.Contains(stderr.String(), "prefix_caching") {
		t.Errorf("default banner names default modes:\n%s", stderr)
	}
	bad := writeTestConfig(t, "simulator:\n  faults: {omit_usage: true, usage_prompt_tokens: 3}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", bad}, bad + ":2: simulator.faults.omit_usage: omits the usage"},
		{[]string{"--tokenizer", "bpe"}, `sim: tokenizer: "bpe" is not words or subword`},
		{[]string{"--chat-template-tokens", "-1"}, "sim: chat_template_tokens: -1 must be ≥ 0"},
		{[]string{"--reasoning-tokens", "-1"}, "sim: reasoning_tokens: -1 must be ≥ 0"},
		{[]string{"--prefix-caching", "--block-size", "0"}, "sim: block_size: 0 must be at least 1"},
		{[]string{"-c", writeTestConfig(t, "simulator:\n  prefix_cache_blocks: -1\n")}, ".yaml:2: simulator.prefix_cache_blocks: -1 must be ≥ 0"},
	} {
		wantSimUsage(t, tc.args, tc.want)
	}
}

// wantSimUsage runs `kneecap sim` with args and wants exit 2 with want in its output.
func wantSimUsage(t *testing.T, args []string, want string) {
	t.Helper()
	e, stderr := simEnv()
	err := run(context.Background(), e, append([]string{"sim", "--addr", "127.0.0.1:0"}, args...))
	if code := exitCode(err); code != exitUsage {
		t.Errorf("%v: exit %d (%v), want %d\n%s", args, code, err, exitUsage, stderr)
	}
	if out := strings.Join(outputLines(stderr.String(), err), "\n"); !strings.Contains(out, want) {
		t.Errorf("%v: output lacks %q:\n%s", args, want, out)
	}
}
