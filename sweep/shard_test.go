package sweep_test

import (
	"testing"

	"github.com/kneecap/kneecap/sweep"
)

// TestWorkersTile: the shards' worker ranges tile 0 … c-1 in shard order and differ in size by
// at most one, for every c and shard count.
func TestWorkersTile(t *testing.T) {
	for shards := 1; shards <= 9; shards++ {
		for c := 0; c <= 70; c++ {
			next, lo, hi := 0, c, 0
			for i := range shards {
				first, n := sweep.Workers(c, i, shards)
				if first != next || n < 0 {
					t.Fatalf("c=%d shard %d/%d: workers %d+%d, want to start at %d", c, i, shards, first, n, next)
				}
				next += n
				lo, hi = min(lo, n), max(hi, n)
			}
			if next != c || hi-lo > 1 {
				t.Fatalf("c=%d over %d shards: %d workers in all, sizes %d…%d", c, shards, next, lo, hi)
			}
		}
	}
}
