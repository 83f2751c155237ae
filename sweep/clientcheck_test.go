package sweep

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestClientStatsClassify(t *testing.T) {
	for _, c := range []struct {
		in    ClientStats
		open  bool // an arrival-rate level: conn_wait is the dial and judges nothing
		bound bool
		why   string
	}{
		{ClientStats{CPUUtilization: 0.5, SchedLatencyP99: time.Millisecond, ConnWaitP99: 100 * time.Microsecond}, false, false, ""},
		{ClientStats{CPUUtilization: 0.95}, false, true, "CPU 95%"},
		{ClientStats{SchedLatencyP99: 6 * time.Millisecond}, false, true, "scheduling latency"},
		{ClientStats{ConnWaitP99: 2 * time.Millisecond}, false, true, "conn_wait"},
		{ClientStats{ConnWaitP99: 2 * time.Millisecond}, true, false, ""},
		{ClientStats{ConnWaitP99: 2 * time.Millisecond, CPUUtilization: 0.95}, true, true, "CPU 95%"},
	} {
		cs := c.in
		cs.classify(c.open)
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
