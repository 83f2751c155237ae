package launch

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/selfcheck"
)

// TestRateLimitLine: every advice of selfcheck.Limits.Check for a concurrency sweep (lower
// sweep.levels, split over --shard) becomes, for a rate sweep's cap, lower
// sweep.max_concurrency (--max-concurrency), and the cap is named as such.
func TestRateLimitLine(t *testing.T) {
	cost := selfcheck.CostOf(false, true, 64)
	l := selfcheck.Limits{Descriptors: 100, DescriptorsHard: 100, MemAvailable: 1 << 20, MemSource: "test"}
	lines := limitLines(l.Check(500, 500, cost))
	if len(lines) != 2 {
		t.Fatalf("%q: want a descriptor line and a memory line", lines)
	}
	for _, line := range lines {
		got := rateLimitLine(line, 500)
		if !strings.Contains(got, "max_concurrency 500 (a rate level's cap on requests in flight) needs") ||
			!strings.HasSuffix(got, "lower sweep.max_concurrency (--max-concurrency)") || strings.Contains(got, "sweep.levels") || strings.Contains(got, "--shard") {
			t.Errorf("%s\n→ %s\nwant the cap named and only the --max-concurrency advice", line, got)
		}
	}
}
