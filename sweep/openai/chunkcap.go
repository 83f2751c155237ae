package openai

import (
	"github.com/kneecap/kneecap/record"
)

// chunkLog keeps a stream's content-chunk arrivals for its record: the offsets (µs from
// t_send) of the first max chunks, then a summary of the rest (record.ChunkTail), so that a
// record's memory and its line in records.jsonl stay bounded however long the stream runs
// (DESIGN §5.4). The zero value records nothing (chunk recording off).
type chunkLog struct {
	offsets []int64 // nil when chunks are not recorded
	max     int
	lastUS  int64 // the offset of the last chunk, kept or not
	tail    record.ChunkTail
	buckets *[record.GapBuckets]uint32 // the tail's gap histogram, allocated at its first chunk
}

// newChunkLog returns the log of a stream that keeps up to max offsets, with room for
// prealloc of them.
func newChunkLog(max, prealloc int) chunkLog {
	return chunkLog{offsets: make([]int64, 0, min(prealloc, max)), max: max}
}

// add records a content chunk that arrived us microseconds after t_send: the per-chunk path,
// which allocates only at the first chunk past the kept ones.
func (l *chunkLog) add(us int64) {
	if l.offsets == nil {
		return
	}
	if len(l.offsets) < l.max {
		l.offsets = append(l.offsets, us)
		l.lastUS = us
		return
	}
	gap := us - l.lastUS
	l.lastUS = us
	if l.buckets == nil {
		l.buckets = new([record.GapBuckets]uint32)
	}
	l.buckets[record.GapBucket(gap)]++
	l.tail.Count++
	l.tail.SumUS += gap
	l.tail.MaxUS = max(l.tail.MaxUS, gap)
}

// chunkTail returns the summary of the chunks past the kept offsets, nil when there were none.
func (l *chunkLog) chunkTail() *record.ChunkTail {
	if l.tail.Count == 0 {
		return nil
	}
	t := l.tail
	for i, n := range l.buckets {
		if n > 0 {
			t.Gaps = append(t.Gaps, [2]int64{record.GapBucketLow(i), int64(n)})
		}
	}
	return &t
}
