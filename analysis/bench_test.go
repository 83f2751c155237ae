package analysis

import (
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// benchRecords builds n records over 8 closed-loop levels, each with 16 chunks of 8 tokens.
func benchRecords(n int) ([]record.LevelRun, []record.Record) {
	const levels = 8
	runs := make([]record.LevelRun, levels)
	recs := make([]record.Record, 0, n)
	per := n / levels
	chunks := make([]int64, 16)
	for j := range chunks {
		chunks[j] = int64(100_000 + 20_000*j) // µs
	}
	e2e := time.Duration(chunks[len(chunks)-1]) * time.Microsecond
	var t0 int64
	for l := range levels {
		c := 1 << l
		span := int64(per/c) * int64(e2e)
		runs[l] = record.LevelRun{Index: l, Concurrency: c, WarmupStart: t0, W0: t0 + span/10, W1: t0 + span*9/10, DrainEnd: t0 + span, Steady: true, Slices: 10}
		for i := range per {
			w, seq := i%c, i/c
			recs = append(recs, record.Record{Level: l, Concurrency: c, Worker: w, Seq: seq, Sent: t0 + int64(seq)*int64(e2e) + int64(w),
				TTFT: 100 * time.Millisecond, E2E: e2e, Chunks: chunks, PromptTokens: 512, OutputTokens: 128, Status: record.StatusOK})
		}
		t0 += span + int64(time.Second)
	}
	return runs, recs
}

// BenchmarkSummarize summarizes 1M records (target: analyze of 1M records in ≤ 5 s).
func BenchmarkSummarize(b *testing.B) {
	runs, recs := benchRecords(1_000_000)
	opts := DefaultOptions()
	b.ResetTimer()
	for b.Loop() {
		levels := Summarize(record.GroupRecords(runs, recs), opts)
		if len(levels) != len(runs) || !levels[3].Valid {
			b.Fatalf("level 3: %+v", levels[3])
		}
	}
}

// BenchmarkAnalyze analyzes 8 levels with the default 500 bootstrap resamples.
func BenchmarkAnalyze(b *testing.B) {
	runs, recs := benchRecords(80_000)
	levels := Summarize(record.GroupRecords(runs, recs), DefaultOptions())
	b.ResetTimer()
	for b.Loop() {
		Analyze(levels, Meta{}, DefaultOptions())
	}
}

// BenchmarkAnalyze1M is `kneecap analyze` of 1M records without I/O: Summarize, then Analyze
// with the default 500 bootstrap resamples (issue 7 target: ≤ 5 s on 2 cores).
func BenchmarkAnalyze1M(b *testing.B) {
	runs, recs := benchRecords(1_000_000)
	opts := DefaultOptions()
	b.ResetTimer()
	for b.Loop() {
		res := Analyze(Summarize(record.GroupRecords(runs, recs), opts), Meta{}, opts)
		if len(res.Levels) != len(runs) {
			b.Fatalf("%d levels", len(res.Levels))
		}
	}
}
