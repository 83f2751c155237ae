package selfcheck

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestClientStatsClassify: on the client's clock (no kernel timestamps) the heuristics judge
// the latencies as before and the load estimate still counts; on the kernel's clock the
// estimates decide against the tolerance and the heuristics are only a note; conn_wait (a
// dial, the server's set-up) decides nothing.
func TestClientStatsClassify(t *testing.T) {
	for _, c := range []struct {
		in     record.ClientStats
		kernel bool
		bound  bool
		why    string
	}{
		{record.ClientStats{CPUUtilization: 0.5, SchedLatencyP99: time.Millisecond, ConnWaitP99: 100 * time.Microsecond}, false, false, ""},
		{record.ClientStats{CPUUtilization: 0.95}, false, true, "CPU 95%"},
		{record.ClientStats{SchedLatencyP99: 6 * time.Millisecond}, false, true, "scheduling latency"},
		{record.ClientStats{ConnWaitP99: 20 * time.Millisecond}, false, false, ""},
		{record.ClientStats{Effects: map[string]float64{EffectLoad: 0.03}, Tolerance: 0.01}, false, true, "offered load 3.0%"},
		{record.ClientStats{CPUUtilization: 0.95, Effects: map[string]float64{"ttft_p95": 0.003, EffectLoad: 0.002}, Tolerance: 0.01}, true, false, ""},
		{record.ClientStats{Effects: map[string]float64{"ttft_p95": 0.02, "tpot_p50": 0.015, EffectLoad: 0.002}, Tolerance: 0.01}, true, true,
			"client effect on TTFT p95 2.0%, TPOT p50 1.5% > tolerance 1.0%"},
	} {
		cs := c.in
		classifyClient(&cs, c.kernel)
		if cs.Bound != c.bound || !strings.Contains(cs.Reason, c.why) {
			t.Errorf("%+v: bound %v reason %q, want %v containing %q", c.in, cs.Bound, cs.Reason, c.bound, c.why)
		}
		if want := map[bool]string{true: record.EvidenceEstimates, false: record.EvidenceHeuristics}[c.kernel]; cs.Evidence != want {
			t.Errorf("%+v: evidence %q, want %q", c.in, cs.Evidence, want)
		}
	}
	busy := record.ClientStats{RunQueueDelay: 0.46, Effects: map[string]float64{"ttft_p95": 0.001}, Tolerance: 0.01}
	classifyClient(&busy, true)
	if busy.Bound || !strings.Contains(busy.Note, "machine busy: run-queue wait 46%") || !strings.Contains(busy.Note, "within tolerance") {
		t.Errorf("busy machine, small effects: bound %v note %q; want not bound, the heuristics quoted", busy.Bound, busy.Note)
	}
}

// TestSchedLatencyP99 reads the p99 from the delta of two histogram readings: 100 new
// samples, 98 in [0, 1 ms), 2 in [1 ms, 8 ms): the 99th lies in the second bucket, reported
// as its upper bound.
func TestSchedLatencyP99(t *testing.T) {
	bounds := []float64{0, 0.001, 0.008, math.Inf(1)}
	s0 := ClientSample{wall: time.Unix(0, 0), counts: []uint64{1000, 5, 7}, bounds: bounds}
	s1 := ClientSample{wall: time.Unix(1, 0), counts: []uint64{1098, 7, 7}, bounds: bounds}
	if got := s1.Since(s0).SchedLatencyP99; got != 8*time.Millisecond {
		t.Errorf("p99 = %v, want 8ms", got)
	}
	// All new samples in the open-ended last bucket: its lower bound.
	s2 := ClientSample{wall: time.Unix(1, 0), counts: []uint64{1000, 5, 9}, bounds: bounds}
	if got := s2.Since(s0).SchedLatencyP99; got != 8*time.Millisecond {
		t.Errorf("p99 = %v, want 8ms", got)
	}
}

// TestSampleClientReadsRuntime: the live readings are usable on this platform.
func TestSampleClientReadsRuntime(t *testing.T) {
	s := SampleClient()
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
	cs := SampleClient().Since(s)
	if cs.CPUUtilization <= 0 || cs.CPUUtilization > 1 || x == 0 {
		t.Errorf("CPU utilisation %v, want in (0, 1]", cs.CPUUtilization)
	}
}
