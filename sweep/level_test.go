package sweep

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestWindowDecideWaitsForHorizon: a candidate window is tested only when every token before
// its end is known (W1 ≤ horizon), and only with min_requests completions in it.
func TestWindowDecideWaitsForHorizon(t *testing.T) {
	const w0 = int64(1e12)
	slice := 10 * ms
	w := newWindow(w0, slice, 10, 12)
	// One request per slice, each with 10 tokens arriving mid-slice and ending there: a flat
	// series (constant slice TPS, so steady), 1 completion per slice.
	for i := range int64(12) {
		sent := w0 + i*slice
		r := Record{Sent: sent, TTFT: 5 * time.Millisecond, E2E: 5 * time.Millisecond, OutputTokens: 10,
			Chunks: []int64{5000}, Status: StatusOK}
		w.add(&r)
	}
	if k := w.decide(w0+10*slice-1, 0, 0.05); k != 0 {
		t.Fatalf("decided k = %d with the horizon 1 ns before the 10th boundary", k)
	}
	// 11 completions needed: the 10-slice window has 10, so the first candidate is 11.
	if k := w.decide(w0+12*slice, 11, 0.05); k != 11 {
		t.Fatalf("decided k = %d, want 11", k)
	}
	if got := w.liveTPS(w0 + 5*slice + 3*ms); math.Abs(got-1000) > 1e-9 {
		t.Errorf("live TPS = %v, want 1000 (10 tokens per 10 ms, full slices only)", got)
	}
}

func TestClientStatsClassify(t *testing.T) {
	for _, c := range []struct {
		in    ClientStats
		bound bool
		why   string
	}{
		{ClientStats{CPUUtilization: 0.5, SchedLatencyP99: time.Millisecond, ConnWaitP99: 100 * time.Microsecond}, false, ""},
		{ClientStats{CPUUtilization: 0.95}, true, "CPU 95%"},
		{ClientStats{SchedLatencyP99: 6 * time.Millisecond}, true, "scheduling latency"},
		{ClientStats{ConnWaitP99: 2 * time.Millisecond}, true, "conn_wait"},
	} {
		cs := c.in
		cs.classify()
		if cs.Bound != c.bound || !strings.Contains(cs.Reason, c.why) {
			t.Errorf("%+v: bound %v reason %q, want %v containing %q", c.in, cs.Bound, cs.Reason, c.bound, c.why)
		}
	}
}

// TestSchedLatencyP99 reads the p99 from the delta of two histogram readings: 100 new
// samples, 98 in [0, 1 ms), 2 in [1 ms, 8 ms): the 99th lies in the second bucket, reported
// as its upper bound.
func TestSchedLatencyP99(t *testing.T) {
	bounds := []float64{0, 0.001, 0.008, math.Inf(1)}
	s0 := clientSample{wall: time.Unix(0, 0), counts: []uint64{1000, 5, 7}, bounds: bounds}
	s1 := clientSample{wall: time.Unix(1, 0), counts: []uint64{1098, 7, 7}, bounds: bounds}
	if got := s1.since(s0).SchedLatencyP99; got != 8*time.Millisecond {
		t.Errorf("p99 = %v, want 8ms", got)
	}
	// All new samples in the open-ended last bucket: its lower bound.
	s2 := clientSample{wall: time.Unix(1, 0), counts: []uint64{1000, 5, 9}, bounds: bounds}
	if got := s2.since(s0).SchedLatencyP99; got != 8*time.Millisecond {
		t.Errorf("p99 = %v, want 8ms", got)
	}
}

// TestSampleClientReadsRuntime: the live readings are usable on this platform.
func TestSampleClientReadsRuntime(t *testing.T) {
	s := sampleClient()
	if len(s.counts) == 0 || len(s.bounds) != len(s.counts)+1 {
		t.Fatalf("sched histogram: %d counts, %d bounds", len(s.counts), len(s.bounds))
	}
	if _, ok := processCPUTime(); !ok {
		t.Skip("no process CPU time on this platform")
	}
	// Burn a little CPU so the utilisation is positive.
	x := 0.0
	for i := range 2_000_000 {
		x += math.Sqrt(float64(i))
	}
	cs := sampleClient().since(s)
	if cs.CPUUtilization <= 0 || cs.CPUUtilization > 1 || x == 0 {
		t.Errorf("CPU utilisation %v, want in (0, 1]", cs.CPUUtilization)
	}
}
