package sweep

import (
	"fmt"
	"time"
)

// LastLevel is the index of the last of n levels a shard runs within p's budget: a level starts
// only when its scheduled load ends within stop.budget of the agreed start (n−1 without a
// budget; at least 0).
func (s *Schedule) LastLevel(p Protocol, n int) int {
	last := n - 1
	for b := p.Stop.Budget; b > 0 && last > 0 && s.LevelEnd(p, last).Add(-p.DrainTimeout).Sub(s.Start) > b; {
		last--
	}
	return last
}

// Describe says, in one sentence for the console, when shard (such as "0/2") runs the n levels
// of p: the first level's start, the period, and the end of the last level the budget admits.
func (s *Schedule) Describe(p Protocol, n int, shard string) string {
	last := s.LastLevel(p, n)
	return fmt.Sprintf("shard %s: level 1 starts at %s, then one level every %s (warmup + max_duration + drain_timeout + cooldown + %s); level %d, the last to run, ends by %s. Stop rules other than stop.budget are not applied: the shards cannot agree on them.",
		shard, s.Start.UTC().Format(time.RFC3339Nano), s.Period(p), ScheduleSlack,
		last+1, s.LevelEnd(p, last).UTC().Format(time.RFC3339Nano))
}
