package config

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/selfcheck"
)

// shardedRate is a sharded rate sweep's configuration, its sweep keys given by sweep (lines 5
// on): shard 0 of 2, starting an hour from now.
func shardedRate(sweep string) string {
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	return "target: {url: \"http://127.0.0.1:9/v1\", model: m}\n" +
		"shard: {index: 0, count: 2, start_at: \"" + at + "\"}\n" +
		"workload: {seed: 7}\n" +
		"sweep:\n" + sweep
}

// TestShardedRateConfig: an arrival-rate sweep may be sharded; its max_concurrency is the
// sweep's cap, max_concurrency ÷ shard.count on each shard, which must be at least 1 and at
// most selfcheck.MaxProcessWorkers (FILE:LINE, key, value, limit).
func TestShardedRateConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, sweep, want string }{
		{"rates", "  mode: rate\n  rates: [1, 2]\n  max_concurrency: 64\n", ""},
		{"default cap", "  mode: rate\n  rates: [1, 2]\n", ""},
		{"cap below shards", "  mode: rate\n  rates: [1, 2]\n  max_concurrency: 1\n",
			":7: sweep.max_concurrency: is 1: less than shard.count 2; the cap is the sweep's, max_concurrency ÷ shard.count on each shard, and every shard needs at least 1: must be ≥ 2"},
		{"cap over two processes", "  mode: rate\n  rates: [1, 2]\n  max_concurrency: " + strconv.Itoa(2*selfcheck.MaxProcessWorkers) + "\n", ""},
		{"cap over the shards", "  mode: rate\n  rates: [1, 2]\n  max_concurrency: " + strconv.Itoa(2*selfcheck.MaxProcessWorkers+2) + "\n",
			":7: sweep.max_concurrency: is 200002: over shard.count 2, a shard carries up to 100001 requests in flight, more than the 100000 one process carries: must be ≤ 200000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, shardedRate(tc.sweep))
			_, err := Load(p)
			probs := Problems(err)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("problems %q, want none", probs)
			case tc.want != "" && (len(probs) != 1 || !strings.HasPrefix(probs[0], p+tc.want)):
				t.Errorf("problems %q, want one starting %q", probs, p+tc.want)
			}
		})
	}
}
