package selfcheck

import (
	"math/bits"
	"slices"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Read lag (DESIGN §3.3): for each content chunk, the time from the kernel's receive timestamp
// of the bytes last read from the connection (SO_TIMESTAMPNS, CLOCK_REALTIME) to the moment the
// client timestamped the chunk. It is how late the client read what had already arrived: the
// direct measure of a client that does not keep up, where CPU, scheduling latency and run-queue
// wait are machine-wide guesses.

// Read-lag thresholds: a level whose read-lag data covers at least ReadLagCoverageMin of its
// chunks is client-bound iff its read-lag p99 exceeds max(readLagFloor, readLagITLShare × its
// ITL p50). The values are bench/load's (docs/performance.md, "Read lag"): against a server of
// TTFT 100 ms and ITL 20 ms, TTFT p50's error stayed under 1% up to a read-lag p99 of 4.1 ms and
// passed it at 13.4 ms, TPOT p50's stayed under 0.2% up to 31 ms; 4 ms is 20% of that ITL.
const (
	readLagFloor       = 4 * time.Millisecond
	readLagITLShare    = 0.20
	ReadLagCoverageMin = 0.5
)

// readLagBuckets is the number of buckets of a ReadLagHist: bucket 0 holds lags under 2 µs;
// above, each power of two is split in two (lower bounds 2, 3, 4, 6, 8, 12, … µs), so a bucket
// spans at most 1.5× its lower bound; lags of 2^20 µs (1.05 s) or more share the last.
const readLagBuckets = 40

// readLagBucket returns the bucket (0 … readLagBuckets − 1) of a lag of us microseconds.
func readLagBucket(us int64) int {
	if us < 2 {
		return 0
	}
	e := bits.Len64(uint64(us)) - 1 // 2^e ≤ us < 2^(e+1), e ≥ 1
	i := 1 + 2*(e-1)
	if us >= 3<<(e-1) {
		i++
	}
	return min(i, readLagBuckets-1)
}

// readLagBucketLow returns the lower bound of bucket i, in microseconds.
func readLagBucketLow(i int) int64 {
	if i <= 0 {
		return 0
	}
	j := min(i, readLagBuckets-1) - 1
	e := j/2 + 1
	if j%2 == 0 {
		return 1 << e
	}
	return 3 << (e - 1)
}

// ReadLagHist accumulates one request's read lags: a fixed array, no allocation per chunk.
type ReadLagHist struct {
	Counts [readLagBuckets]uint32
	Max    int64 // ns
	N      int
	// Missed counts the content chunks read when the connection had no timestamp yet.
	Missed int
}

// Add counts a lag of ns nanoseconds (a negative lag, the wall clock stepped, counts as 0).
func (h *ReadLagHist) Add(ns int64) {
	ns = max(ns, 0)
	h.Counts[readLagBucket(ns/1000)]++
	h.Max = max(h.Max, ns)
	h.N++
}

// Record returns the record's summary (nil when no chunk was seen).
func (h *ReadLagHist) Record() *record.ReadLag {
	if h.N == 0 && h.Missed == 0 {
		return nil
	}
	rl := &record.ReadLag{Count: h.N, MaxUS: h.Max / 1000, Missed: h.Missed}
	nb := 0
	for _, c := range h.Counts {
		if c > 0 {
			nb++
		}
	}
	if nb > 0 {
		rl.Buckets = make([][2]int64, 0, nb)
		for i, c := range h.Counts {
			if c > 0 {
				rl.Buckets = append(rl.Buckets, [2]int64{readLagBucketLow(i), int64(c)})
			}
		}
	}
	return rl
}

// recordChunks returns the content chunks of rec: those its read lag saw, else those its
// Chunks, ChunksTail or ITL count.
func recordChunks(rec *record.Record) int {
	switch {
	case rec.ReadLag != nil:
		return rec.ReadLag.Count + rec.ReadLag.Missed
	case rec.ITL != nil:
		return rec.ITL.Count + 1
	}
	return record.ChunkCount(rec)
}

// levelReadLag sets the read-lag fields of cs from the requests that streamed during [w0, w1)
// (sent before w1, ended after w0; a record keeps no per-chunk lag, so their chunks outside the
// window count too): the p50, p99 and max over their timestamped chunks, their count, their
// share of the chunks, and the threshold, from the level's ITL p50 (the median of the
// requests' mean inter-chunk gaps).
func levelReadLag(cs *record.ClientStats, records []record.Record, w0, w1 int64) {
	var counts [readLagBuckets]int64
	var n, all, maxUS int64
	var gaps []float64
	for i := range records {
		r := &records[i]
		if r.Sent >= w1 || r.Done() <= w0 {
			continue
		}
		c := recordChunks(r)
		all += int64(c)
		if r.OK() && c > 1 {
			gaps = append(gaps, float64(r.E2E-r.TTFT)/float64(c-1))
		}
		if rl := r.ReadLag; rl != nil {
			for _, b := range rl.Buckets {
				counts[readLagBucket(b[0])] += b[1]
			}
			n += int64(rl.Count)
			maxUS = max(maxUS, rl.MaxUS)
		}
	}
	cs.ReadLagChunks = int(n)
	if n == 0 || all == 0 {
		return
	}
	cs.ReadLagCoverage = float64(n) / float64(all)
	cs.ReadLagMax = time.Duration(maxUS) * time.Microsecond
	cs.ReadLagP50 = readLagQuantile(&counts, n, 0.50, cs.ReadLagMax)
	cs.ReadLagP99 = readLagQuantile(&counts, n, 0.99, cs.ReadLagMax)
	cs.ReadLagThreshold = readLagFloor
	if len(gaps) > 0 {
		slices.Sort(gaps)
		itl := time.Duration(gaps[len(gaps)/2])
		cs.ReadLagThreshold = max(readLagFloor, time.Duration(readLagITLShare*float64(itl)))
	}
}

// readLagQuantile returns the q-quantile of the n lags of counts, interpolated linearly within
// the bucket holding it (as Prometheus' histogram_quantile does; a bucket spans at most 1.5×
// its lower bound), at most max.
func readLagQuantile(counts *[readLagBuckets]int64, n int64, q float64, maxLag time.Duration) time.Duration {
	rank := q * float64(n)
	var cum int64
	for i, c := range counts {
		if c == 0 || float64(cum+c) < rank {
			cum += c
			continue
		}
		if i == readLagBuckets-1 {
			return maxLag
		}
		lo, hi := float64(readLagBucketLow(i)), float64(readLagBucketLow(i+1))
		us := lo + (hi-lo)*max(0, rank-float64(cum))/float64(c)
		return min(maxLag, time.Duration(us*float64(time.Microsecond)))
	}
	return maxLag
}
