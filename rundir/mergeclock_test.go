package rundir

import (
	"slices"
	"testing"

	"github.com/kneecap/kneecap/config"
)

// TestConfigDiffIgnoresClock: shards that differ only in the clock's addresses (shard 0
// serves, the others measure against it) are one sweep; a difference in what loads the
// server still is not.
func TestConfigDiffIgnoresClock(t *testing.T) {
	t.Parallel()
	a, b := config.Default(), config.Default()
	a.Shard = config.ShardConfig{Index: 0, Count: 2, StartAt: "2026-11-30T10:00:00Z", ServeClock: ":7070"}
	b.Shard = config.ShardConfig{Index: 1, Count: 2, StartAt: "2026-11-30T10:00:00Z", ClockServer: "kneecap-0.kneecap:7070"}
	if diff := configDiff(a, b); len(diff) > 0 {
		t.Errorf("configDiff = %v, want none", diff)
	}
	b.Sweep.Warmup++
	if diff := configDiff(a, b); !slices.Equal(diff, []string{"sweep"}) {
		t.Errorf("configDiff = %v, want [sweep]", diff)
	}
}
