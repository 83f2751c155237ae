package sweep

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"gonum.org/v1/gonum/floats/scalar"
)

// TestGapBuckets checks the gap histogram's buckets: every gap falls in the bucket whose
// lower bound is at most it and whose next bucket's is above it, bucket lower bounds map back
// to their bucket, and the midpoint stands for every gap of its bucket within 1/32 (3.1%).
func TestGapBuckets(t *testing.T) {
	for i := range record.GapBuckets {
		if got := record.GapBucket(record.GapBucketLow(i)); got != i {
			t.Fatalf("GapBucket(GapBucketLow(%d) = %d) = %d", i, record.GapBucketLow(i), got)
		}
		if i > 0 && record.GapBucketLow(i) <= record.GapBucketLow(i-1) {
			t.Fatalf("bucket %d starts at %d, not above bucket %d's %d", i, record.GapBucketLow(i), i-1, record.GapBucketLow(i-1))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(us int64) {
		i := record.GapBucket(us)
		lo := record.GapBucketLow(i)
		if us < lo || (i+1 < record.GapBuckets && us >= record.GapBucketLow(i+1)) {
			t.Fatalf("gap %d µs in bucket %d [%d, %d)", us, i, lo, record.GapBucketLow(i+1))
		}
		if mid := record.GapBucketMid(lo); us > 0 && us < 1<<record.GapTop && math.Abs(mid-float64(us)) > float64(us)/32 {
			t.Fatalf("gap %d µs: bucket midpoint %g is %.2f%% off, more than 3.1%%", us, mid, 100*math.Abs(mid-float64(us))/float64(us))
		}
	}
	for us := range int64(5000) {
		check(us)
	}
	for range 100000 {
		check(int64(math.Exp(rng.Float64() * math.Log(1<<record.GapTop))))
	}
	check(1<<record.GapTop - 1)
	if record.GapBucket(-5) != 0 || record.GapBucket(math.MaxInt64) != record.GapBuckets-1 {
		t.Errorf("GapBucket(-5) = %d, GapBucket(MaxInt64) = %d; want 0 and %d", record.GapBucket(-5), record.GapBucket(math.MaxInt64), record.GapBuckets-1)
	}
}

// TestTokensInWindowChunkTail checks the placement of a tail's chunks: evenly after the last
// kept offset, the last at the last chunk's offset, k = N_out ÷ all chunks tokens each. A
// record whose chunks really were evenly spaced gives the same slices capped as uncapped.
func TestTokensInWindowChunkTail(t *testing.T) {
	const w0 = int64(1_000_000_000_000)
	// 100 chunks 1 ms apart from 10 ms, 2 tokens each; the first 30 kept.
	full := record.Record{Sent: w0, TTFT: 10 * time.Millisecond, E2E: 109 * time.Millisecond, OutputTokens: 200, Status: record.StatusOK}
	for j := range 100 {
		full.Chunks = append(full.Chunks, int64(10_000+1000*j))
	}
	capped := full
	capped.Chunks = full.Chunks[:30]
	capped.ChunksTail = &record.ChunkTail{Count: 70, SumUS: 70_000, MaxUS: 1000, Gaps: [][2]int64{{record.GapBucketLow(record.GapBucket(1000)), 70}}}
	if n := record.ChunkCount(&capped); n != 100 {
		t.Fatalf("ChunkCount = %d, want 100", n)
	}
	for _, w := range []struct{ w0, w1 int64 }{
		{w0, w0 + 200*ms}, {w0 + 35*ms, w0 + 75*ms}, {w0 + 38*ms + 500_000, w0 + 39*ms + 500_000}, {w0 + 109*ms, w0 + 110*ms},
	} {
		a, b := make([]float64, 7), make([]float64, 7)
		ga, gb := record.TokensInWindow(&full, w.w0, w.w1, a), record.TokensInWindow(&capped, w.w0, w.w1, b)
		if !scalar.EqualWithinAbs(ga, gb, 1e-9) {
			t.Errorf("window [%d, %d) ms: %v tokens capped, %v uncapped", (w.w0-w0)/ms, (w.w1-w0)/ms, gb, ga)
		}
		for i := range a {
			if !scalar.EqualWithinAbs(a[i], b[i], 1e-9) {
				t.Errorf("window [%d, %d) ms slice %d: %v tokens capped, %v uncapped", (w.w0-w0)/ms, (w.w1-w0)/ms, i, b[i], a[i])
			}
		}
	}
	// Uneven truth: the tail's 70 chunks really came in a burst at the end; placed evenly, the
	// tokens of the whole request are still all counted, and the last at its true time.
	all := make([]float64, 1)
	if got := record.TokensInWindow(&capped, w0, w0+110*ms, all); !scalar.EqualWithinAbs(got, 200, 1e-9) {
		t.Errorf("whole request: %v tokens, want 200", got)
	}
	if got := record.TokensInWindow(&capped, w0+109*ms, w0+110*ms, all); !scalar.EqualWithinAbs(got, 2, 1e-9) {
		t.Errorf("[109, 110) ms: %v tokens, want 2 (the last chunk)", got)
	}
	// A tail whose gaps sum to 0 (or less, from a hostile file) puts its chunks at the last
	// kept offset.
	zero := capped
	zero.ChunksTail = &record.ChunkTail{Count: 70, SumUS: -5}
	if got := record.TokensInWindow(&zero, w0+39*ms, w0+40*ms, all); !scalar.EqualWithinAbs(got, 2+140, 1e-9) {
		t.Errorf("zero-sum tail: %v tokens at the last kept offset, want 142", got)
	}
}

// TestRecordLineBounded encodes a record with every field at its largest (4,096 offsets of 10
// minutes, a tail with every histogram bucket at 1 Mi gaps, a 512-byte error and note, every
// count at 10⁷) and checks that its records.jsonl line is under 56 KiB (DESIGN §5.4).
func TestRecordLineBounded(t *testing.T) {
	const big = 10_000_000
	long := strings.Repeat("é", 256) + "…" // 512 bytes and the ellipsis, as Client.message cuts
	r := record.Record{Level: 999, Concurrency: selfcheck.MaxProcessWorkers, Worker: selfcheck.MaxProcessWorkers - 1, Seq: big, Phase: record.PhaseMeasure,
		Sent: math.MaxInt64, ConnWait: 10 * time.Minute, TTFT: 10 * time.Minute, E2E: 10 * time.Minute,
		PromptTokens: big, OutputTokens: big, TokensSource: record.TokensFromChunks, Status: record.StatusError,
		ErrorClass: record.ErrStreamBroken, Error: long, RequestedPromptTokens: big, RequestedOutputTokens: big,
		TTFA: 10 * time.Minute, ReasoningChunks: big, ReasoningTokens: big, UsageOutputTokens: 1e12, UsagePromptTokens: 1e15,
		TokensNote: long, Retried: true}
	for range record.MaxRecordedChunks {
		r.Chunks = append(r.Chunks, int64((10 * time.Minute).Microseconds()))
	}
	r.ChunksTail = &record.ChunkTail{Count: 1 << 20, SumUS: math.MaxInt64, MaxUS: math.MaxInt64}
	for i := range record.GapBuckets {
		r.ChunksTail.Gaps = append(r.ChunksTail.Gaps, [2]int64{record.GapBucketLow(i), 1 << 20})
	}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) >= 56<<10 {
		t.Errorf("largest record line %d bytes, want under 56 KiB", len(line))
	}
	short := record.Record{Level: 3, Concurrency: 64, Worker: 17, Seq: 120, Phase: record.PhaseMeasure, Sent: 1_790_000_000_000_000_000,
		ConnWait: 20 * time.Microsecond, TTFT: 180 * time.Millisecond, E2E: 3 * time.Second, PromptTokens: 512, OutputTokens: 256,
		TokensSource: record.TokensFromUsage, Status: record.StatusOK, RequestedPromptTokens: 512, RequestedOutputTokens: 256}
	fixed, _ := json.Marshal(short)
	for j := range 256 {
		short.Chunks = append(short.Chunks, int64(180_000+j*11_000))
	}
	with, _ := json.Marshal(short)
	t.Logf("largest record line %d bytes; a 256-token record %d bytes (%d without its offsets)", len(line), len(with), len(fixed))
}
