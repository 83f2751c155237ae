package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestShardRateFlagErrors: a shard of a rate sweep refuses, before it sends anything, --rates
// auto without --from (each shard's probe would plan other rates: probe first, then pass the
// same rates to every shard) and a cap with fewer slots than shards.
func TestShardRateFlagErrors(t *testing.T) {
	t.Parallel()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	shard := []string{"sweep", "--shard", "0/2", "--start-at", future, "--url", "http://127.0.0.1:9/v1", "--model", "m"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rates", "auto"}, "probe first (a rate sweep without --shard, or --rates auto's probe), then pass the same --rates R1,R2,… (or --rates auto --from DIR) to every shard"},
		{[]string{"--rates", "1,2", "--max-concurrency", "1"}, "sweep.max_concurrency: is 1: less than shard.count 2"},
	} {
		e, _, stderr := testEnv()
		err := run(context.Background(), e, append(append([]string(nil), shard...), tc.args...))
		if exitCode(err) != exitUsage || !strings.Contains(stderr.String()+errString(err), tc.want) {
			t.Errorf("sweep %q: exit %d, %v\nstderr: %s\nwant %d saying %q", tc.args, exitCode(err), err, stderr, exitUsage, tc.want)
		}
	}
}
