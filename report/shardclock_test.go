package report

import (
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// TestSubtitleClocks: a merged rate sweep's subtitle says where its load came from and, in
// one clause, the clock offsets its shards were shifted by (record.ClockSummary of its
// levels' shards); a merge without measured clocks says only the first.
func TestSubtitleClocks(t *testing.T) {
	t.Parallel()
	runs := []record.LevelRun{
		{Shards: []record.ShardLag{{Index: 0}, {Index: 1, ClockOffset: 50_000_000, ClockUncertainty: 120_000}}},
		{Shards: []record.ShardLag{{Index: 0}, {Index: 1, ClockOffset: 50_400_000, ClockUncertainty: 90_000}}},
	}
	m := analysis.Meta{Model: "m", LoadGenerators: 2, Clocks: record.ClockSummary(runs)}
	if got, want := subtitle(m), "m · load from 2 kneecap processes (clock offsets +0.000 … +50.400 ms applied, largest uncertainty ±0.120 ms)"; got != want {
		t.Errorf("subtitle %q, want %q", got, want)
	}
	m.Clocks = record.ClockSummary([]record.LevelRun{{Shards: []record.ShardLag{{Index: 0}, {Index: 1}}}})
	if got, want := subtitle(m), "m · load from 2 kneecap processes"; got != want {
		t.Errorf("subtitle %q, want %q", got, want)
	}
}
