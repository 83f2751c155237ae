package selfcheck

import (
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestReadLagBuckets: each bucket's lower bound falls in it, the bounds ascend by at most 1.5×
// from 2 µs, and the quantiles of a known population are within a bucket of the truth.
func TestReadLagBuckets(t *testing.T) {
	for i := range readLagBuckets {
		lo := readLagBucketLow(i)
		if readLagBucket(lo) != i {
			t.Errorf("bucket of low(%d) = %d µs is %d", i, lo, readLagBucket(lo))
		}
		if i > 1 && float64(lo) > 1.5*float64(readLagBucketLow(i-1)) {
			t.Errorf("bucket %d: low %d > 1.5 × %d", i, lo, readLagBucketLow(i-1))
		}
		if i > 0 && readLagBucket(lo-1) != i-1 {
			t.Errorf("bucket of %d µs is %d, want %d", lo-1, readLagBucket(lo-1), i-1)
		}
	}
	var h ReadLagHist
	for us := int64(1); us <= 1000; us++ { // 1 … 1000 µs, one each: p50 500 µs, p99 990 µs
		h.Add(us * 1000)
	}
	rl := h.Record()
	if rl.Count != 1000 || rl.MaxUS != 1000 {
		t.Fatalf("record %+v", rl)
	}
	r := record.Record{Sent: 10, E2E: 100, ReadLag: rl, Status: record.StatusOK}
	var cs record.ClientStats
	levelReadLag(&cs, []record.Record{r}, 0, 1000)
	for _, c := range []struct {
		got, want time.Duration
	}{{cs.ReadLagP50, 500 * time.Microsecond}, {cs.ReadLagP99, 990 * time.Microsecond}, {cs.ReadLagMax, time.Millisecond}} {
		if d := float64(c.got-c.want) / float64(c.want); d > 0.5 || d < -0.34 {
			t.Errorf("quantile %v, want %v within a bucket", c.got, c.want)
		}
	}
	if cs.ReadLagCoverage != 1 || cs.ReadLagChunks != 1000 || cs.ReadLagThreshold != readLagFloor {
		t.Errorf("coverage %v chunks %d threshold %v", cs.ReadLagCoverage, cs.ReadLagChunks, cs.ReadLagThreshold)
	}
}

// TestLevelReadLagThreshold: the threshold is 20% of the level's ITL p50 when that is above
// 4 ms, and the coverage counts the chunks of records without read lag.
func TestLevelReadLagThreshold(t *testing.T) {
	var h ReadLagHist
	for range 10 {
		h.Add(100_000)
	}
	// 11 chunks 100 ms apart: ITL 100 ms → threshold 20 ms.
	withLag := record.Record{Sent: 0, TTFT: 10 * time.Millisecond, E2E: 1010 * time.Millisecond, Status: record.StatusOK,
		ITL: &record.ITLSummary{Count: 10}, ReadLag: h.Record()}
	withLag.ReadLag.Missed = 1
	without := record.Record{Sent: 0, TTFT: 10 * time.Millisecond, E2E: 1010 * time.Millisecond, Status: record.StatusOK, ITL: &record.ITLSummary{Count: 10}}
	var cs record.ClientStats
	levelReadLag(&cs, []record.Record{withLag, without}, 0, int64(time.Second))
	if cs.ReadLagThreshold != 20*time.Millisecond || cs.ReadLagChunks != 10 || cs.ReadLagCoverage != 10.0/22 {
		t.Errorf("threshold %v chunks %d coverage %v; want 20ms, 10, 10/22", cs.ReadLagThreshold, cs.ReadLagChunks, cs.ReadLagCoverage)
	}
}
