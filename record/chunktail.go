package record

import "math/bits"

// MaxRecordedChunks is the number of content chunks whose arrival offsets a record keeps by
// default (Record.Chunks): the first 4,096. The chunks past them are summarised in
// Record.ChunksTail, so that a record of an endless or very long stream stays small (at most
// about 41 KiB of offsets in records.jsonl, 32 KiB in memory; DESIGN §5.4).
const MaxRecordedChunks = 4096

// ChunkTail summarises the content chunks of one request past those whose offsets
// Record.Chunks keeps: how many arrived and the gaps between them, each gap measured from the
// chunk before (the first from the last kept chunk), in microseconds, as a sum, a maximum and
// a histogram (GapBucket). The tail's chunks are placed evenly after the last kept chunk:
// the j-th of Count (from 1) at Chunks[len−1] + j × SumUS ÷ Count, so the last one arrives
// at the last chunk's true offset (TokensInWindow).
type ChunkTail struct {
	// Count is the number of content chunks past the kept offsets.
	Count int `json:"count"`
	// SumUS is the sum of their gaps: the last chunk's offset − the last kept offset.
	SumUS int64 `json:"sum_us"`
	// MaxUS is the largest of their gaps.
	MaxUS int64 `json:"max_us"`
	// Gaps is the histogram of their gaps: [lower bound in µs, count] of each bucket that
	// holds a gap, in ascending order, the buckets of GapBucket.
	Gaps [][2]int64 `json:"gaps,omitempty"`
}

// Gap histogram buckets: a gap under gapExact µs has a bucket of its own (1 µs wide); above,
// each power of two is split into gapSub equal buckets, so a bucket is at most 1/16 of its
// lower bound wide, and its midpoint (GapBucketMid) within 1/32 (3.1%) of every gap in it.
// Gaps of 2^gapTop µs (19 hours) or more share the last bucket.
const (
	gapSubBits = 4
	gapSub     = 1 << gapSubBits
	gapExact   = 2 * gapSub
	GapTop     = 36
	// GapBuckets is the number of buckets of the gap histogram.
	GapBuckets = gapExact + (GapTop-gapSubBits-1)*gapSub
)

// GapBucket returns the histogram bucket (0 … GapBuckets − 1) of a gap of us microseconds
// (negative gaps count as 0).
func GapBucket(us int64) int {
	switch {
	case us < gapExact:
		return int(max(us, 0))
	case us >= 1<<GapTop:
		return GapBuckets - 1
	}
	e := bits.Len64(uint64(us)) - 1 // 2^e ≤ us < 2^(e+1), e ≥ gapSubBits+1
	sub := int(us>>(e-gapSubBits)) & (gapSub - 1)
	return gapExact + (e-gapSubBits-1)*gapSub + sub
}

// GapBucketLow returns the lower bound of bucket i, in microseconds (GapBucket(GapBucketLow(i))
// is i).
func GapBucketLow(i int) int64 {
	if i < gapExact {
		return int64(max(i, 0))
	}
	i = min(i, GapBuckets-1) - gapExact
	e := i/gapSub + gapSubBits + 1
	return int64(gapSub+i%gapSub) << (e - gapSubBits)
}

// GapBucketMid returns the value that stands for the gaps of the bucket whose lower bound is
// low µs: the mean of the whole microseconds it holds (low itself for the 1 µs buckets under
// 32 µs), within 3.1% of each of them.
func GapBucketMid(low int64) float64 {
	if low < gapExact {
		return float64(max(low, 0))
	}
	e := bits.Len64(uint64(low)) - 1
	width := int64(1) << (e - gapSubBits)
	return float64(low) + float64(width-1)/2
}

// ChunkCount returns the number of content chunks of rec whose arrival is known: the offsets
// kept in Chunks and the chunks of its ChunksTail (0 when chunks were not recorded).
func ChunkCount(rec *Record) int {
	n := len(rec.Chunks)
	if t := rec.ChunksTail; t != nil && t.Count > 0 {
		n += t.Count
	}
	return n
}
