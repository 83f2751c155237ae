package sweep

import (
	"fmt"
	"github.com/kneecap/kneecap/workload"
	"math"
	"time"
)

// traceLevelProtocol is the protocol of a trace level at scale s: its window a whole number of
// passes P = Pass ÷ s, the fewest that reach duration, ⌈duration ÷ P⌉ × P, and at most
// max_duration (fewer passes when more would pass it); duration and max_duration are both
// set to it (the window does not grow while the steady-state test fails: a trace level is
// judged by its backlog, DESIGN §3.9). A pass longer than max_duration makes the window one
// pass, and note says so.
func traceLevelProtocol(t *workload.Trace, p Protocol, s float64) (q Protocol, note string) {
	pass := time.Duration(math.Round(float64(t.Pass()) / s))
	if pass <= 0 {
		return p, ""
	}
	limit := max(p.MaxDuration, p.Duration)
	k := max(1, (p.Duration+pass-1)/pass)
	if k*pass > limit {
		k = max(1, limit/pass)
	}
	if k*pass > limit {
		note = fmt.Sprintf("one pass of the trace's window at time scale %g lasts %v, longer than sweep.max_duration %v: the level measures one pass", s, pass.Round(time.Millisecond), limit)
	}
	p.Duration, p.MaxDuration = k*pass, k*pass
	return p, note
}
