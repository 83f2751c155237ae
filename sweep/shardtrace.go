package sweep

import (
	"fmt"
	"math"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// tracePass is how long one pass of t's window lasts at time scale s: Pass ÷ s, rounded to
// the nanosecond (0 for a scale that is not positive).
func tracePass(t *workload.Trace, s float64) time.Duration {
	if !(s > 0) {
		return 0
	}
	return time.Duration(math.Round(float64(t.Pass()) / s))
}

// TraceProblem reports the first of rates (a trace replay's offered rates, its time scales ×
// the trace's mean rate) at whose time scale one pass of t's window lasts longer than the
// scheduled window of p, max_duration in whole slices (DESIGN §8), naming the keys to change;
// nil when every pass fits. On a Schedule a trace level measures whole passes within that
// window: a longer pass would overrun the level's slot, and every shard would miss the next
// level.
func TraceProblem(t *workload.Trace, p Protocol, rates []float64) error {
	window := scheduledWindow(p)
	for _, r := range rates {
		s := t.Scale(r)
		pass := tracePass(t, s)
		if pass <= window {
			continue
		}
		slice := p.Duration / record.MinSlices
		need := pass
		if slice > 0 {
			need = (pass + slice - 1) / slice * slice
		}
		return fmt.Errorf("time scale %g (sweep.time_scales): one pass of the trace's window lasts %v, longer than the scheduled window %v (sweep.max_duration %v in whole slices of sweep.duration ÷ %d): the level would overrun its place in the shards' schedule; raise sweep.max_duration to at least %v, narrow workload.trace.window or drop the time scale",
			s, pass.Round(time.Millisecond), window, p.MaxDuration, record.MinSlices, need)
	}
	return nil
}
