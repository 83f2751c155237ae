package selfcheck

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// The client self-check: the load generator watches its own CPU, Go scheduling latency,
// connection-pool wait and run-queue wait over the measurement window, and a level whose
// numbers may describe the client rather than the server is marked client-bound.

// Client self-diagnosis thresholds: above any of them a level's ClientStats.Bound is set and
// its numbers may describe the load generator rather than the server.
const (
	// clientCPUBound is the process CPU utilisation (of GOMAXPROCS cores) above which the
	// client is bound.
	clientCPUBound = 0.9
	// clientSchedBound is the p99 Go scheduling latency above which the client is bound.
	clientSchedBound = 5 * time.Millisecond
	// ClientRunQueueBound is the share of the window the process's threads spent runnable but
	// waiting for a CPU (per GOMAXPROCS), above which the client is bound: another process
	// was starving it, so its timestamps are late.
	ClientRunQueueBound = 0.2
)

// schedMetric is the runtime/metrics histogram of goroutine scheduling latencies.
const schedMetric = "/sched/latencies:seconds"

// ClientSample is a reading of the process's CPU time and scheduling-latency histogram.
type ClientSample struct {
	wall  time.Time
	cpu   time.Duration
	cpuOK bool
	// runDelay is the process's threads' total run-queue wait (Linux schedstat).
	runDelay   time.Duration
	runDelayOK bool
	counts     []uint64
	bounds     []float64
}

func SampleClient() ClientSample {
	s := ClientSample{wall: time.Now()}
	s.cpu, s.cpuOK = processCPUTime()
	s.runDelay, s.runDelayOK = processRunDelay()
	m := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(m)
	if m[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := m[0].Value.Float64Histogram()
		s.counts = append([]uint64(nil), h.Counts...)
		s.bounds = h.Buckets
	}
	return s
}

// Since returns the client statistics between s0 and s (ConnWaitP99 left for the caller).
func (s ClientSample) Since(s0 ClientSample) *record.ClientStats {
	cs := &record.ClientStats{}
	wall := s.wall.Sub(s0.wall)
	if s.cpuOK && s0.cpuOK && wall > 0 {
		cs.CPUUtilization = min(1, float64(s.cpu-s0.cpu)/(float64(wall)*float64(runtime.GOMAXPROCS(0))))
	}
	if s.runDelayOK && s0.runDelayOK && wall > 0 {
		cs.RunQueueDelay = max(0, float64(s.runDelay-s0.runDelay)/(float64(wall)*float64(runtime.GOMAXPROCS(0))))
	}
	if len(s.counts) == len(s0.counts) && len(s.counts) > 0 && len(s.bounds) == len(s.counts)+1 {
		cs.SchedLatencyP99 = histogramP99(s.counts, s0.counts, s.bounds)
	}
	return cs
}

// histogramP99 returns the p99 of the samples added to a histogram between two readings
// (counts0, then counts, over buckets bounds): the upper bound of the bucket holding it, a
// conservative p99 (the lower bound for the open-ended last bucket); 0 when none was added.
func histogramP99(counts, counts0 []uint64, bounds []float64) time.Duration {
	delta := make([]uint64, len(counts))
	var total uint64
	for i := range delta {
		delta[i] = counts[i] - counts0[i]
		total += delta[i]
	}
	if total == 0 {
		return 0
	}
	target := uint64(math.Ceil(0.99 * float64(total)))
	var cum uint64
	for i, n := range delta {
		cum += n
		if cum >= target {
			up := bounds[i+1]
			if math.IsInf(up, 1) {
				up = bounds[i]
			}
			return time.Duration(up * float64(time.Second))
		}
	}
	return 0
}

// connWaitP99 is the p99 (type 7, Percentile) of conn_wait over requests sent in [w0, w1).
func connWaitP99(records []record.Record, w0, w1 int64) time.Duration {
	var ws []float64
	for i := range records {
		if record.SentInWindow(&records[i], w0, w1) {
			ws = append(ws, float64(records[i].ConnWait))
		}
	}
	return record.DurationPercentile(ws, 99)
}

// judge sets the client statistics of the window [w0, w1) of records — conn_wait p99, the
// connections the server made the client dial, the read lag and the effect estimates — then
// Bound and Reason (classify) against tolerance (a fraction; 0: DefaultClientTolerance). On
// an arrival-rate level (open) the latency population is the window's arrivals and the load
// estimates are the client's lateness behind the schedule (scheduleEffects).
func JudgeClient(cs *record.ClientStats, records []record.Record, w0, w1 int64, open bool, tolerance float64) {
	cs.ConnWaitP99 = connWaitP99(records, w0, w1)
	countDials(cs, records, w0, w1)
	levelReadLag(cs, records, w0, w1)
	if !(tolerance > 0) {
		tolerance = DefaultClientTolerance
	}
	cs.Tolerance = tolerance
	classifyClient(cs, estimateEffects(cs, records, w0, w1, open))
}

// dials sets DialShare and DialP99: the share of the requests sent in [w0, w1) whose
// connection was newly dialled and their set-up's p99 (Record.Setup), the server's doing when
// it closes connections after a stream (llama-server) or answers Connection: close.
func countDials(cs *record.ClientStats, records []record.Record, w0, w1 int64) {
	var n int
	var setup []float64
	for i := range records {
		if r := &records[i]; record.SentInWindow(r, w0, w1) {
			n++
			if r.Dialed {
				setup = append(setup, float64(r.Setup))
			}
		}
	}
	if n > 0 && len(setup) > 0 {
		cs.DialShare = float64(len(setup)) / float64(n)
		cs.DialP99 = record.DurationPercentile(setup, 99)
	}
}

// readLagDecides reports whether the read lag covers enough of the window's chunks to decide
// the verdict of a level from before the effect estimates (DESIGN §3.3).
func readLagDecides(cs *record.ClientStats) bool {
	return cs.ReadLagChunks > 0 && cs.ReadLagCoverage >= ReadLagCoverageMin
}

// classify sets Bound, Reason, Evidence and Note. With the latencies on the kernel's clock
// (kernel) the estimates decide: the level is client-bound when one exceeds Tolerance, and
// CPU, scheduling latency and run-queue wait are only quoted in Note. On the client's clock
// the heuristics judge the latencies as before the estimates, and the load estimates still
// count. Connection set-up is the server's and never decides (DialShare says how much of it
// there was).
func classifyClient(cs *record.ClientStats, kernel bool) {
	var why []string
	heur := MachineBusy(cs)
	over := worstEffects(cs.Effects, cs.Tolerance)
	if len(over) > 0 {
		why = append(why, fmt.Sprintf("client effect on %s > tolerance %.1f%% (%s)", strings.Join(over, ", "),
			100*cs.Tolerance, effectBasis(kernel)))
	}
	cs.Note = ""
	if kernel {
		cs.Evidence = record.EvidenceEstimates
		if len(heur) > 0 {
			kept := "the client's effect on every number within tolerance"
			if len(over) > 0 {
				kept = "the client fell behind"
			}
			cs.Note = fmt.Sprintf("machine busy: %s; %s", strings.Join(heur, ", "), kept)
		}
	} else {
		cs.Evidence = record.EvidenceHeuristics
		why = append(heur, why...)
	}
	cs.Bound = len(why) > 0
	cs.Reason = strings.Join(why, "; ")
}

// MachineBusy lists the heuristics over the thresholds that the client statistics cs of a
// span (a level's window, or any span between two SampleClient readings) exceed: CPU,
// scheduling latency p99, run-queue wait. None: the machine let the client run.
func MachineBusy(cs *record.ClientStats) []string {
	var heur []string
	if cs.CPUUtilization > clientCPUBound {
		heur = append(heur, fmt.Sprintf("CPU %.0f%% > %.0f%%", 100*cs.CPUUtilization, 100*clientCPUBound))
	}
	if cs.SchedLatencyP99 > clientSchedBound {
		heur = append(heur, fmt.Sprintf("scheduling latency p99 %s > %s", cs.SchedLatencyP99, clientSchedBound))
	}
	if cs.RunQueueDelay > ClientRunQueueBound {
		heur = append(heur, fmt.Sprintf("run-queue wait %.0f%% of the window > %.0f%% (the machine is busy with other work)",
			100*cs.RunQueueDelay, 100*ClientRunQueueBound))
	}
	return heur
}

// effectBasis says what the estimates rest on, for the reason of a client-bound level.
func effectBasis(kernel bool) string {
	if kernel {
		return "latencies on the kernel's clock: chunks late reads gathered, late sends; the load from the client's turnaround or lateness"
	}
	return "the load from the client's turnaround or lateness; latencies on the client's clock"
}

// fmtLag renders a read lag to 0.1 ms, or to 1 µs under 1 ms.
func fmtLag(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%d µs", d.Microseconds())
}

// boundNote is the level's note when the client was bound.
func ClientBoundNote(cs *record.ClientStats) string {
	return "client-bound: " + cs.Reason + "; the numbers may describe the load generator, not the server"
}
