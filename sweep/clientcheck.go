package sweep

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"
)

// The client self-check: the load generator watches its own CPU, Go scheduling latency,
// connection-pool wait and run-queue wait over the measurement window, and a level whose
// numbers may describe the client rather than the server is marked client-bound.

// Client self-diagnosis thresholds: above any of them a level's ClientStats.Bound is set and
// its numbers may describe the load generator rather than the server.
const (
	// ClientCPUBound is the process CPU utilisation (of GOMAXPROCS cores) above which the
	// client is bound.
	ClientCPUBound = 0.9
	// ClientSchedBound is the p99 Go scheduling latency above which the client is bound.
	ClientSchedBound = 5 * time.Millisecond
	// ClientConnWaitBound is the p99 connection-pool wait above which the client is bound.
	ClientConnWaitBound = time.Millisecond
	// ClientRunQueueBound is the share of the window the process's threads spent runnable but
	// waiting for a CPU (per GOMAXPROCS), above which the client is bound: another process
	// was starving it, so its timestamps are late.
	ClientRunQueueBound = 0.2
)

// schedMetric is the runtime/metrics histogram of goroutine scheduling latencies.
const schedMetric = "/sched/latencies:seconds"

// clientSample is a reading of the process's CPU time and scheduling-latency histogram.
type clientSample struct {
	wall  time.Time
	cpu   time.Duration
	cpuOK bool
	// runDelay is the process's threads' total run-queue wait (Linux schedstat).
	runDelay   time.Duration
	runDelayOK bool
	counts     []uint64
	bounds     []float64
}

func sampleClient() clientSample {
	s := clientSample{wall: time.Now()}
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

// since returns the client statistics between s0 and s (ConnWaitP99 left for the caller).
func (s clientSample) since(s0 clientSample) *ClientStats {
	cs := &ClientStats{}
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
func connWaitP99(records []Record, w0, w1 int64) time.Duration {
	var ws []float64
	for i := range records {
		if SentInWindow(&records[i], w0, w1) {
			ws = append(ws, float64(records[i].ConnWait))
		}
	}
	return durationPercentile(ws, 99)
}

// judge sets ConnWaitP99 and the read-lag fields from the requests sent in the window [w0, w1)
// of records, then Bound and Reason from the thresholds. On an arrival-rate level (open)
// conn_wait is reported but judges nothing: the connection pool is at least the cap on requests
// in flight, so no request waits for a connection and conn_wait is the dial of the new
// connections an open loop opens as its in-flight count wanders (the server's accept and the
// network); the client's own lateness there is the schedule lag (Record.StartLag), which the
// analysis judges.
func (cs *ClientStats) judge(records []Record, w0, w1 int64, open bool) {
	cs.ConnWaitP99 = connWaitP99(records, w0, w1)
	cs.levelReadLag(records, w0, w1)
	cs.classify(open)
}

// ReadLagDecides reports whether the read lag covers enough of the window's chunks to decide
// the verdict (DESIGN §3.3).
func (cs *ClientStats) ReadLagDecides() bool {
	return cs.ReadLagChunks > 0 && cs.ReadLagCoverage >= ReadLagCoverageMin
}

// classify sets Bound, Reason, Evidence and Note from the thresholds (conn_wait's only when not
// open). When the read lag covers the window it decides, and CPU, scheduling latency and
// run-queue wait are only quoted in Note; else they decide, as they did before read lag.
func (cs *ClientStats) classify(open bool) {
	var heur, why []string
	if cs.CPUUtilization > ClientCPUBound {
		heur = append(heur, fmt.Sprintf("CPU %.0f%% > %.0f%%", 100*cs.CPUUtilization, 100*ClientCPUBound))
	}
	if cs.SchedLatencyP99 > ClientSchedBound {
		heur = append(heur, fmt.Sprintf("scheduling latency p99 %s > %s", cs.SchedLatencyP99, ClientSchedBound))
	}
	if cs.RunQueueDelay > ClientRunQueueBound {
		heur = append(heur, fmt.Sprintf("run-queue wait %.0f%% of the window > %.0f%% (the machine is busy with other work)",
			100*cs.RunQueueDelay, 100*ClientRunQueueBound))
	}
	cs.Note = ""
	if cs.ReadLagDecides() {
		cs.Evidence = EvidenceReadLag
		lagBound := cs.ReadLagP99 > cs.ReadLagThreshold
		if lagBound {
			why = append(why, fmt.Sprintf("read lag p99 %s > %s (max of %s and %.0f%% of ITL p50; kernel receive timestamps)",
				fmtLag(cs.ReadLagP99), fmtLag(cs.ReadLagThreshold), fmtLag(ReadLagFloor), 100*ReadLagITLShare))
		}
		if len(heur) > 0 {
			kept := "the client kept up"
			if lagBound {
				kept = "the client fell behind"
			}
			cs.Note = fmt.Sprintf("machine busy: %s; read lag p99 %s: %s", strings.Join(heur, ", "), fmtLag(cs.ReadLagP99), kept)
		}
	} else {
		cs.Evidence = EvidenceHeuristics
		why = heur
	}
	if cs.ConnWaitP99 > ClientConnWaitBound && !open {
		why = append(why, fmt.Sprintf("conn_wait p99 %s > %s", cs.ConnWaitP99, ClientConnWaitBound))
	}
	cs.Bound = len(why) > 0
	cs.Reason = strings.Join(why, ", ")
}

// fmtLag renders a read lag to 0.1 ms, or to 1 µs under 1 ms.
func fmtLag(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%d µs", d.Microseconds())
}

// boundNote is the level's note when the client was bound.
func (cs *ClientStats) boundNote() string {
	return "client-bound: " + cs.Reason + "; the numbers may describe the load generator, not the server"
}
