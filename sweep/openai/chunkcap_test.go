package openai

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
)

// capRecord returns r with its chunk offsets passed through the client's chunk log of max
// offsets: the record the client would have written with MaxRecordedChunks = max.
func capRecord(r record.Record, max int) record.Record {
	l := newChunkLog(max, max)
	for _, us := range r.Chunks {
		l.add(us)
	}
	r.Chunks, r.ChunksTail = l.offsets, l.chunkTail()
	return r
}

// TestRecordChunksCapped streams 300 content chunks, with a 3 ms pause before every 50th (gaps
// of several sizes), to a client that keeps 64 offsets: the record keeps the first 64 and
// summarises the other 236 (their count, the sum of their gaps up to the last chunk's offset,
// the largest gap, and a histogram of every one of them).
func TestRecordChunksCapped(t *testing.T) {
	const n, keep = 300, 64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(roleChunk())
		for i := range n {
			if i > 0 && i%50 == 0 {
				time.Sleep(3 * time.Millisecond) // the server's pace, not a synchronisation
			}
			s.data(contentChunk("t"))
		}
		s.data(usageChunk(3, n))
		s.data("[DONE]")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(o *Options) { o.MaxRecordedChunks = keep })
	rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: n})
	if rec.Status != record.StatusOK || rec.OutputTokens != n {
		t.Fatalf("%s %s %s, %d tokens", rec.Status, rec.ErrorClass, rec.Error, rec.OutputTokens)
	}
	tail := rec.ChunksTail
	if len(rec.Chunks) != keep || tail == nil || tail.Count != n-keep || record.ChunkCount(&rec) != n {
		t.Fatalf("%d offsets kept, tail %+v: want %d and %d more", len(rec.Chunks), tail, keep, n-keep)
	}
	if !slices.IsSorted(rec.Chunks) {
		t.Errorf("offsets not sorted: %v", rec.Chunks)
	}
	// The tail's gaps end at the last chunk, whose arrival is E2E (µs truncation: 1 µs).
	if last := rec.Chunks[keep-1] + tail.SumUS; math.Abs(float64(last-rec.E2E.Microseconds())) > 1 {
		t.Errorf("last kept offset %d µs + tail %d µs = %d, want E2E %d µs", rec.Chunks[keep-1], tail.SumUS, last, rec.E2E.Microseconds())
	}
	var inGaps int64
	for i, g := range tail.Gaps {
		if g[1] <= 0 || (i > 0 && g[0] <= tail.Gaps[i-1][0]) || g[0] > tail.MaxUS {
			t.Fatalf("gap histogram %v: buckets must ascend, hold gaps, and start at or below the max gap %d", tail.Gaps, tail.MaxUS)
		}
		inGaps += g[1]
	}
	if inGaps != int64(tail.Count) {
		t.Errorf("histogram holds %d gaps, want %d", inGaps, tail.Count)
	}
	// The largest gap is in the histogram's last bucket, and at least the mean gap.
	if lastLow := tail.Gaps[len(tail.Gaps)-1][0]; record.GapBucketLow(record.GapBucket(tail.MaxUS)) != lastLow ||
		tail.MaxUS*int64(tail.Count) < tail.SumUS {
		t.Errorf("largest tail gap %d µs: want it in the last bucket (from %d µs) and ≥ the mean %d µs",
			tail.MaxUS, lastLow, tail.SumUS/int64(tail.Count))
	}
	// A stream that fits keeps every offset and no tail.
	short := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: n})
	if len(short.Chunks) != n || short.ChunksTail != nil {
		t.Errorf("default cap: %d offsets, tail %+v; want %d and none", len(short.Chunks), short.ChunksTail, n)
	}
}

// TestEndlessStreamRecordBounded streams content chunks as fast as the server writes them,
// never [DONE], until the request timeout (or the 1 Mi chunks of MaxChunks, on a fast
// machine): the record keeps record.MaxRecordedChunks offsets, and its records.jsonl line
// stays under 64 KiB (before the cap a record held up to 1 Mi offsets, ≈ 3.4 MB a line).
func TestEndlessStreamRecordBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		for r.Context().Err() == nil {
			s.data(contentChunk("z"))
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(o *Options) { o.RequestTimeout = 1500 * time.Millisecond })
	rec := do(t, c, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 1 << 20})
	if rec.ErrorClass != record.ErrTimeout && rec.ErrorClass != record.ErrBadChunk {
		t.Fatalf("%s %s %s, want timeout (or bad_chunk: more than MaxChunks)", rec.Status, rec.ErrorClass, rec.Error)
	}
	n := record.ChunkCount(&rec)
	if n <= record.MaxRecordedChunks {
		t.Skipf("only %d chunks arrived in 1.5 s: too slow a machine to pass the cap", n)
	}
	if len(rec.Chunks) != record.MaxRecordedChunks || rec.ChunksTail == nil || rec.OutputTokens != n {
		t.Fatalf("%d offsets kept of %d chunks (%d tokens), tail %v", len(rec.Chunks), n, rec.OutputTokens, rec.ChunksTail != nil)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > 64<<10 {
		t.Errorf("record line %d bytes for %d chunks, want ≤ 64 KiB", len(line), n)
	}
	t.Logf("%d chunks in 1.5 s: a %d-byte record line (%d histogram buckets)", n, len(line), len(rec.ChunksTail.Gaps))
}

// TestCappedRecordsAnalyzeAlike streams 160-token requests from the simulator, keeping every
// offset, and analyzes the level twice: as recorded, and with each record capped at 24 offsets
// as the client would have written it. TTFT, TPOT and E2E are the same numbers; ITL mean and
// percentiles are within 1/32 (each tail gap enters at its histogram bucket's midpoint, within
// 3.1% of it, and a quantile moves no more than its elements); output TPS in a window that
// cuts through the tails is the uncapped one with each tail's true arrivals in the window
// replaced by those of its even placement (the j-th of n at the last kept offset + j × the
// tail's span ÷ n), to 1e-9 tokens.
func TestCappedRecordsAnalyzeAlike(t *testing.T) {
	srv := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = 5*time.Millisecond, time.Millisecond })
	c := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	const workers, tokens = 8, 160
	recs := make([]record.Record, workers)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Go(func() {
			c.Do(context.Background(), &record.Request{Prompt: "a b c", PromptTokens: 3, MaxTokens: tokens, IgnoreEOS: true}, &recs[i])
		})
	}
	wg.Wait()
	first, last := recs[0].Sent, recs[0].Done()
	for i := range recs {
		r := &recs[i]
		if r.Status != record.StatusOK || len(r.Chunks) != tokens {
			t.Fatalf("request %d: %s %s, %d chunks", i, r.Status, r.Error, len(r.Chunks))
		}
		r.Phase, r.Worker = record.PhaseMeasure, i
		first, last = min(first, r.Sent), max(last, r.Done())
	}
	capped := make([]record.Record, workers)
	for i := range recs {
		capped[i] = capRecord(recs[i], 24)
	}
	// The window: from the first send to the middle of the streams' tails.
	run := record.LevelRun{Concurrency: workers, W0: first, W1: first + (last-first)*3/5, Steady: true, Slices: 10}
	lv := analysis.Summarize([]record.Level{{Run: run, Records: recs}, {Run: run, Records: capped}}, analysis.DefaultOptions())
	full, cut := lv[0], lv[1]
	exact := map[string][2]analysis.Latency{"TTFT": {full.TTFT, cut.TTFT}, "TPOT": {full.TPOT, cut.TPOT}, "E2E": {full.E2E, cut.E2E}}
	for name, l := range exact {
		if l[0] != l[1] {
			t.Errorf("%s: %+v capped, %+v uncapped: want the same", name, l[1], l[0])
		}
	}
	for name, v := range map[string][2]analysis.Float{
		"mean": {full.ITL.Mean, cut.ITL.Mean}, "p50": {full.ITL.P50, cut.ITL.P50}, "p90": {full.ITL.P90, cut.ITL.P90},
		"p95": {full.ITL.P95, cut.ITL.P95}, "p99": {full.ITL.P99, cut.ITL.P99},
	} {
		if !v[0].OK() || !scalar.EqualWithinRel(float64(v[1]), float64(v[0]), 1.0/32) {
			t.Errorf("ITL %s: %v ms capped, %v ms uncapped: want within 3.1%%", name, v[1], v[0])
		}
	}
	// The tail tokens that arrived in the window, truly and as placed.
	var truly, placed int
	for i := range recs {
		r, kept := &recs[i], capped[i].Chunks
		in := func(us float64) bool {
			at := float64(r.Sent-run.W0) + us*1e3
			return at >= 0 && at < float64(run.W1-run.W0)
		}
		last, n := float64(kept[len(kept)-1]), len(r.Chunks)-len(kept)
		span := float64(r.Chunks[len(r.Chunks)-1]) - last
		for j := 1; j <= n; j++ {
			if in(float64(r.Chunks[len(kept)+j-1])) {
				truly++
			}
			if in(last + float64(j)*span/float64(n)) {
				placed++
			}
		}
	}
	window := float64(run.W1-run.W0) / 1e9
	if want := float64(full.OutputTPS) + float64(placed-truly)/window; !scalar.EqualWithinAbs(float64(cut.OutputTPS), want, 1e-9/window) {
		t.Errorf("output TPS %v capped, want %v: %v uncapped with %d tail tokens in the window placed evenly for the %d that arrived in it",
			cut.OutputTPS, want, full.OutputTPS, placed, truly)
	}
	if !slices.ContainsFunc(cut.Notes, func(n string) bool {
		return n == "ITL: 8 requests streamed more chunks than a record keeps the offsets of; their later gaps come from each record's gap histogram (within 3.1%)"
	}) {
		t.Errorf("capped level's notes %q lack the ITL histogram note", cut.Notes)
	}
	t.Logf("ITL p50 %.4f / %.4f ms, p99 %.4f / %.4f ms; output TPS %.1f / %.1f (uncapped / capped; %d tail tokens in the window, %d placed there)",
		full.ITL.P50, cut.ITL.P50, full.ITL.P99, cut.ITL.P99, full.OutputTPS, cut.OutputTPS, truly, placed)
}
