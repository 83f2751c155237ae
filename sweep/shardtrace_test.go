package sweep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// evenTrace is a Mooncake trace of n requests gap apart: one pass lasts n × gap (the last
// arrival + one mean gap).
func evenTrace(t *testing.T, n int, gap time.Duration) *workload.Trace {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": 8, \"output_length\": 2, \"hash_ids\": [%d]}\n", int64(i)*gap.Milliseconds(), i)
	}
	tf, err := workload.ParseTrace(strings.NewReader(b.String()), "even.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.NewTrace(tf, workload.TraceConfig{File: "even.jsonl", BlockTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestTraceLevelWithinSlot: on a Schedule a trace level's window, whole passes, stays within
// the scheduled window (max_duration in whole slices), which sets the level's slot. With
// duration 1 s (slices of 100 ms) and max_duration 1.55 s that window is 1.5 s; a pass of
// 770 ms (7 requests 110 ms apart) needs two passes, 1.54 s, to reach duration: within
// max_duration, past the slot by 40 ms. On a Schedule the level measures one pass; one
// process, two.
func TestTraceLevelWithinSlot(t *testing.T) {
	tr := evenTrace(t, 7, 110*time.Millisecond)
	p := Protocol{Duration: time.Second, MaxDuration: 1550 * time.Millisecond, MinRequests: 1, CITarget: 1}
	if pass := tracePass(tr, 1); pass != 770*time.Millisecond || scheduledWindow(p) != 1500*time.Millisecond {
		t.Fatalf("pass %v, scheduled window %v: want 770ms and 1.5s", pass, scheduledWindow(p))
	}
	q, _ := traceLevelProtocol(tr, p, 1, true)
	if q.Duration != 770*time.Millisecond || scheduledWindow(q) > scheduledWindow(p) {
		t.Errorf("on a Schedule: window %v (scheduled %v), want one pass within %v", q.Duration, scheduledWindow(q), scheduledWindow(p))
	}
	if q, _ := traceLevelProtocol(tr, p, 1, false); q.Duration != 1540*time.Millisecond {
		t.Errorf("one process: window %v, want two passes, 1.54s", q.Duration)
	}
}

// TestShardedTraceTooLong: a sharded trace replay whose pass at some time scale is longer than
// the scheduled window is refused, naming the scale, the pass, the window and what to change:
// 7 requests 110 ms apart at time scale 0.5 pass in 1.54 s, past a 1 s window (duration =
// max_duration 1 s); max_duration must reach 1.6 s in whole 100 ms slices. Time scale 1 (770
// ms) fits, and one process, which measures one pass and notes it, is not refused.
func TestShardedTraceTooLong(t *testing.T) {
	tr := evenTrace(t, 7, 110*time.Millisecond)
	p := Protocol{Mode: record.ModeRate, Duration: time.Second, MaxDuration: time.Second, MinRequests: 1, CITarget: 1}
	if err := TraceProblem(tr, p, []float64{tr.Rate(1)}); err != nil {
		t.Errorf("time scale 1: %v, want it to fit", err)
	}
	err := TraceProblem(tr, p, []float64{tr.Rate(1), tr.Rate(0.5)})
	const want = "time scale 0.5 (sweep.time_scales): one pass of the trace's window lasts 1.54s, longer than the scheduled window 1s (sweep.max_duration 1s in whole slices of sweep.duration ÷ 10): the level would overrun its place in the shards' schedule; raise sweep.max_duration to at least 1.6s, narrow workload.trace.window or drop the time scale"
	if err == nil || err.Error() != want {
		t.Errorf("time scale 0.5: %v\nwant %s", err, want)
	}
	w, err := workload.NewTraceWorkload(workload.WorkloadConfig{Seed: 3}, record.APIChat, tr)
	if err != nil {
		t.Fatal(err)
	}
	plan := Plan{Rates: []float64{tr.Rate(0.5)}, Trace: tr, MaxConcurrency: 4, Protocol: p, Workload: w}
	if err := plan.Validate(); err != nil {
		t.Errorf("one process: %v, want none", err)
	}
	plan.Schedule = &Schedule{Start: time.Now(), Shard: 0, Shards: 2}
	if err := plan.Validate(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a shard: %v\nwant %s", err, want)
	}
}
