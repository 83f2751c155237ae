//go:build unix

package launch

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
)

// fixedRefiner asks for one concurrency, always.
type fixedRefiner int

func (r fixedRefiner) Refine([]record.Level) (float64, string) { return float64(r), "test" }

// TestLimitedRefiner checks that an added level is checked before it starts: one the process
// cannot carry is not added, and adding stops with the limit's reason.
func TestLimitedRefiner(t *testing.T) {
	cost := selfcheck.CostOf(false, true, 64)
	if c, why := (limitedRefiner{fixedRefiner(24), cost}).Refine(nil); c != 24 || why != "test" {
		t.Errorf("a level that fits: %g %q, want 24 \"test\"", c, why)
	}
	c, why := (limitedRefiner{fixedRefiner(selfcheck.MaxProcessWorkers + 1), cost}).Refine(nil)
	if c != 0 || !strings.HasPrefix(why, "client limit: concurrency 100001 is more than the 100000 workers one process runs") {
		t.Errorf("a level past the maximum: %g %q, want 0 and the limit's reason", c, why)
	}
}
