package config

import (
	"strings"
	"testing"
	"time"
)

// shardedYAML is a valid sharded sweep's configuration, shard: last, with extra appended
// under shard: (each line of extra indented by two spaces).
func shardedYAML(extra string) string {
	start := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	return "target: {url: http://127.0.0.1:1/v1, model: m}\nshard:\n  count: 2\n  start_at: " + start + "\n" + extra
}

// TestShardClockConfig: shard.serve_clock and shard.clock_server take host:port addresses on
// a sharded sweep (both at once too: every pod of an Indexed Job serves and all measure pod
// 0), and each bad value is one problem naming FILE:LINE and the key.
func TestShardClockConfig(t *testing.T) {
	t.Parallel()
	for _, extra := range []string{
		"  serve_clock: :7070\n",
		"  serve_clock: 127.0.0.1:0\n  clock_server: 127.0.0.1:7070\n",
		"  serve_clock: \"[::]:7070\"\n  clock_server: kneecap-0.kneecap:7070\n",
	} {
		c, err := Load(writeConfig(t, shardedYAML(extra)))
		if err != nil {
			t.Errorf("%q: %v", extra, err)
		} else if c.Shard.ServeClock == "" {
			t.Errorf("%q: serve_clock not decoded: %+v", extra, c.Shard)
		}
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"serve_clock unsharded", "shard:\n  serve_clock: :7070\n", `:2: shard.serve_clock: ":7070": only the shards of a sharded sweep measure their clocks`},
		{"clock_server unsharded", "shard:\n  clock_server: 10.0.0.5:7070\n", `:2: shard.clock_server: "10.0.0.5:7070": only the shards of a sharded sweep`},
		{"no port", shardedYAML("  clock_server: 10.0.0.5\n"), `:5: shard.clock_server: "10.0.0.5": not a host:port such as 10.0.0.5:7070 (missing port in address)`},
		{"no host to measure", shardedYAML("  clock_server: :7070\n"), `:5: shard.clock_server: ":7070": no host`},
		{"port 0 to measure", shardedYAML("  clock_server: 10.0.0.5:0\n"), `:5: shard.clock_server: "10.0.0.5:0": port "0": want a number in [1, 65535]`},
		{"port too large", shardedYAML("  serve_clock: :70000\n"), `:5: shard.serve_clock: ":70000": port "70000": want a number in [0, 65535]`},
		{"named port", shardedYAML("  serve_clock: :http\n"), `:5: shard.serve_clock: ":http": port "http": want a number`},
		{"a URL", shardedYAML("  clock_server: http://10.0.0.5:7070\n"), `:5: shard.clock_server: "http://10.0.0.5:7070": not a host:port`},
		{"whitespace", shardedYAML("  clock_server: \"a b:7070\"\n"), `:5: shard.clock_server: "a b:7070": the host holds whitespace`},
	} {
		t.Run(tc.name, func(t *testing.T) { oneProblem(t, tc.yaml, tc.want) })
	}
}

// oneProblem loads a configuration file of text and checks that it has exactly one problem,
// which starts with the file's path and then want (":LINE: key: …").
func oneProblem(t *testing.T, text, want string) {
	t.Helper()
	p := writeConfig(t, text)
	_, err := Load(p)
	if probs := Problems(err); len(probs) != 1 || !strings.HasPrefix(probs[0], p+want) {
		t.Errorf("problems %q, want one starting %q", probs, p+want)
	}
}
