package sweep

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"gonum.org/v1/gonum/floats/scalar"
)

const ms = int64(time.Millisecond)

func TestSliceTokensAttribution(t *testing.T) {
	const w0 = int64(1_000_000_000_000)
	w1 := w0 + 100*ms
	recs := []record.Record{
		// 4 chunks of 2 tokens at w0−40, +10, +60, +110 ms: one chunk in each half of the
		// window; the first and last are outside.
		{Sent: w0 - 50*ms, TTFT: 10 * time.Millisecond, E2E: 160 * time.Millisecond,
			Chunks: []int64{10_000, 60_000, 110_000, 160_000}, OutputTokens: 8, Status: record.StatusOK},
		// No chunks: 100 tokens spread over [w0+20, w0+120] ms, 1 token/ms: 30 in
		// [w0, w0+50), 50 in [w0+50, w0+100), 20 after the window.
		{Sent: w0, TTFT: 20 * time.Millisecond, E2E: 120 * time.Millisecond, OutputTokens: 100, Status: record.StatusOK},
		// One chunk, all 5 tokens at w0+70 ms, then a failure: its tokens count none
		// (record.Record.CountsTokens).
		{Sent: w0 + 30*ms, TTFT: 40 * time.Millisecond, E2E: 40 * time.Millisecond, OutputTokens: 5, Status: record.StatusError},
		// Failed before any content: no tokens.
		{Sent: w0 + 10*ms, E2E: 5 * time.Millisecond, OutputTokens: 0, Status: record.StatusError},
		// Entirely before the window.
		{Sent: w0 - 90*ms, TTFT: 10 * time.Millisecond, E2E: 80 * time.Millisecond, Chunks: []int64{10_000, 80_000}, OutputTokens: 2, Status: record.StatusOK},
	}
	got := record.SliceTokens(recs, w0, w1, 2)
	want := []float64{2 + 30, 2 + 50}
	for i := range want {
		if !scalar.EqualWithinAbsOrRel(got[i], want[i], 1e-9, 1e-12) {
			t.Errorf("slice %d: %v tokens, want %v", i, got[i], want[i])
		}
	}
	if tok := record.WindowOutputTokens(recs, w0, w1); !scalar.EqualWithinAbs(tok, 84, 1e-9) {
		t.Errorf("window tokens = %v, want 84", tok)
	}
	if tps := record.LevelOutputTPS(recs, w0, w1); !scalar.EqualWithinAbs(tps, 840, 1e-6) {
		t.Errorf("TPS = %v, want 840 (84 tokens / 0.1 s)", tps)
	}
	tps := record.SliceTPS(recs, w0, w1, 2)
	if !scalar.EqualWithinAbs(tps[0], 640, 1e-6) || !scalar.EqualWithinAbs(tps[1], 1040, 1e-6) {
		t.Errorf("slice TPS = %v, want [640 1040] (tokens / 0.05 s)", tps)
	}
	// QPS: successful completions inside the window: the chunked record ends at w0+110 (out),
	// the spread one at w0+120 (out), the last at w0−10 (out) → 0; widen to w0+130 ms: 2 in
	// 0.13 s.
	if q := record.WindowQPS(recs, w0, w1); q != 0 {
		t.Errorf("QPS = %v, want 0", q)
	}
	if q := record.WindowQPS(recs, w0, w0+130*ms); !scalar.EqualWithinRel(q, 2/0.13, 1e-12) {
		t.Errorf("QPS = %v, want %v", q, 2/0.13)
	}
	// Achieved concurrency over [w0, w0+100): overlaps 100 (chunked: to w0+110), 100 (spread),
	// 40 (w0+30..70), 5 (w0+10..15), 0 → 245 ms / 100 ms.
	if c := record.AchievedConcurrency(recs, w0, w1); !scalar.EqualWithinAbs(c, 2.45, 1e-12) {
		t.Errorf("achieved concurrency = %v, want 2.45", c)
	}
	if record.SliceTokens(recs, w0, w0, 10) != nil || record.SliceTokens(recs, w0, w1, 0) != nil {
		t.Error("empty window or no slices must give nil")
	}
}

// TestTokensInWindowCases: the discrete spread of a record without chunks (first token at
// TTFT, last at E2E), chunks without a token count, and offsets that do not ascend.
func TestTokensInWindowCases(t *testing.T) {
	const w0 = int64(1_700_000_000_000_000_000) // a Unix time: float64 is not exact here
	one := make([]float64, 1)
	// 3 tokens at w0+10, +20, +30 ms.
	spread := record.Record{Sent: w0, TTFT: 10 * time.Millisecond, E2E: 30 * time.Millisecond, OutputTokens: 3, Status: record.StatusOK}
	for _, c := range []struct {
		lo, hi int64 // ms from w0
		want   float64
	}{{15, 30, 1}, {15, 31, 2}, {10, 11, 1}, {0, 10, 0}, {0, 100, 3}, {31, 100, 0}} {
		clear(one)
		if got := record.TokensInWindow(&spread, w0+c.lo*ms, w0+c.hi*ms, one); got != c.want || one[0] != c.want {
			t.Errorf("spread, window [%d, %d) ms: %v tokens (slice %v), want %v", c.lo, c.hi, got, one[0], c.want)
		}
	}
	// One token, or TTFT = E2E: everything at TTFT.
	single := record.Record{Sent: w0, TTFT: 10 * time.Millisecond, E2E: 10 * time.Millisecond, OutputTokens: 4, Status: record.StatusOK}
	two := make([]float64, 2)
	if got := record.TokensInWindow(&single, w0, w0+40*ms, two); got != 4 || two[0] != 4 || two[1] != 0 {
		t.Errorf("single instant: %v tokens, slices %v; want 4 in the first", got, two)
	}
	// Chunks without a token count (usage missing, imported data): one per chunk.
	noCount := record.Record{Sent: w0, Chunks: []int64{1_000, 2_000, 3_000}, TTFT: time.Millisecond, E2E: 3 * time.Millisecond, Status: record.StatusOK}
	clear(one)
	if got := record.TokensInWindow(&noCount, w0, w0+10*ms, one); got != 3 {
		t.Errorf("chunks, OutputTokens 0: %v tokens, want 3", got)
	}
	// Offsets that do not ascend are skipped or counted where they fall, never misplaced.
	unsorted := record.Record{Sent: w0, Chunks: []int64{30_000, 5_000, 12_000, 50_000}, OutputTokens: 4, Status: record.StatusOK}
	clear(two)
	got := record.TokensInWindow(&unsorted, w0+10*ms, w0+40*ms, two)
	if got > 2 || two[0]+two[1] != got || two[0] > 1 || two[1] > 1 {
		t.Errorf("unsorted chunks: %v tokens, slices %v; want at most the 12 ms (slice 0) and 30 ms (slice 1) ones", got, two)
	}
	if record.TokensInWindow(&spread, w0, w0+100*ms, nil) != 0 || record.TokensInWindow(&spread, w0, w0, one) != 0 {
		t.Error("no slices or an empty window must give 0")
	}
}

// TestSliceBoundsUneven checks that slices of a window that does not divide evenly cover it
// without gaps or overlap: the sum over slices equals the whole-window count.
func TestSliceBoundsUneven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w0 := int64(5_000_000_007)
	w1 := w0 + 1_000_003 // 1.000003 ms in 7 slices: uneven
	var recs []record.Record
	for range 200 {
		sent := w0 - 200_000 + rng.Int64N(1_400_000)
		n := 1 + rng.IntN(20)
		ch := make([]int64, n)
		off := int64(0)
		for j := range ch {
			off += rng.Int64N(50)
			ch[j] = off
		}
		recs = append(recs, record.Record{Sent: sent, Chunks: ch, OutputTokens: 3 * n, TTFT: time.Duration(ch[0]) * time.Microsecond, E2E: time.Duration(off) * time.Microsecond, Status: record.StatusOK})
		recs = append(recs, record.Record{Sent: sent, TTFT: time.Duration(rng.Int64N(100_000)), E2E: time.Duration(100_000 + rng.Int64N(900_000)), OutputTokens: 1 + rng.IntN(50), Status: record.StatusOK})
	}
	whole := record.WindowOutputTokens(recs, w0, w1)
	var sum float64
	for _, v := range record.SliceTokens(recs, w0, w1, 7) {
		sum += v
	}
	if whole == 0 || !scalar.EqualWithinRel(sum, whole, 1e-9) {
		t.Errorf("sum over 7 slices = %v, whole window = %v", sum, whole)
	}
	b := bins{w0: w0, w1: w1, n: 7}
	for t0 := w0; t0 < w1; t0 += 997 {
		i := b.index(t0)
		if t0 < b.bound(i) || t0 >= b.bound(i+1) {
			t.Fatalf("t = %d in slice %d = [%d, %d)", t0, i, b.bound(i), b.bound(i+1))
		}
	}
}

// TestWindowAccumulatorMatchesSliceTPS checks that the controller's incremental accumulator
// gives the same slice TPS, bit for bit, as the exported function over the final window.
func TestWindowAccumulatorMatchesSliceTPS(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w0, slice := int64(1e15), 7*ms
	w := newWindow(w0, slice, 10, 15)
	var recs []record.Record
	for range 500 {
		sent := w0 - 50*ms + rng.Int64N(150*ms)
		e2e := 1 + rng.Int64N(40*ms)
		r := record.Record{Sent: sent, TTFT: time.Duration(e2e / 3), E2E: time.Duration(e2e), OutputTokens: 1 + rng.IntN(30), Status: record.StatusOK}
		if rng.IntN(2) == 0 {
			r.Chunks = []int64{e2e / 3000, e2e / 2000, e2e / 1000}
		}
		recs = append(recs, r)
		w.add(&recs[len(recs)-1])
	}
	for _, k := range []int{10, 12, 15} {
		want := record.SliceTPS(recs, w0, w0+int64(k)*slice, k)
		got := w.sliceTPS(k)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("k = %d slice %d: accumulator %v, SliceTPS %v", k, i, got[i], want[i])
			}
		}
	}
}

func TestQuantileType7(t *testing.T) {
	// numpy.percentile(np.arange(1, 11), q) with the default linear method:
	// q=50 → 5.5, q=90 → 9.1, q=99 → 9.91, q=0 → 1, q=100 → 10.
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{0.5, 5.5}, {0.9, 9.1}, {0.99, 9.91}, {0, 1}, {1, 10}} {
		if got := record.Percentile(xs, 100*c.p); !scalar.EqualWithinAbs(got, c.want, 1e-12) {
			t.Errorf("Percentile(%v) = %v, want %v", 100*c.p, got, c.want)
		}
	}
	if record.DurationPercentile(nil, 50) != 0 {
		t.Error("empty input must give 0")
	}
}

// BenchmarkSliceTokens attributes 1,000 records of 128 chunks to 10 slices (the final
// slice TPS of a level).
func BenchmarkSliceTokens(b *testing.B) {
	const w0 = int64(1e15)
	recs := make([]record.Record, 1000)
	for i := range recs {
		ch := make([]int64, 128)
		for j := range ch {
			ch[j] = int64(50_000 + 10_000*j)
		}
		recs[i] = record.Record{Sent: w0 + int64(i)*ms, Chunks: ch, OutputTokens: 128, TTFT: 50 * time.Millisecond, E2E: 1320 * time.Millisecond, Status: record.StatusOK}
	}
	for b.Loop() {
		record.SliceTokens(recs, w0+100*ms, w0+1100*ms, 10)
	}
}

// TestWindowDecideWaitsForHorizon: a candidate window is tested only when every token before
// its end is known (W1 ≤ horizon), and only with min_requests completions in it.
func TestWindowDecideWaitsForHorizon(t *testing.T) {
	const w0 = int64(1e12)
	slice := 10 * ms
	w := newWindow(w0, slice, 10, 12)
	// One request per slice, each with 10 tokens arriving mid-slice and ending there: a flat
	// series (constant slice TPS, so steady), 1 completion per slice.
	for i := range int64(12) {
		sent := w0 + i*slice
		r := record.Record{Sent: sent, TTFT: 5 * time.Millisecond, E2E: 5 * time.Millisecond, OutputTokens: 10,
			Chunks: []int64{5000}, Status: record.StatusOK}
		w.add(&r)
	}
	if k := w.decide(w0+10*slice-1, 0, 0.05); k != 0 {
		t.Fatalf("decided k = %d with the horizon 1 ns before the 10th boundary", k)
	}
	// 11 completions needed: the 10-slice window has 10, so the first candidate is 11.
	if k := w.decide(w0+12*slice, 11, 0.05); k != 11 {
		t.Fatalf("decided k = %d, want 11", k)
	}
}

// TestLiveTPSWhileInFlight: the live output rate is the tokens of the requests completed in the
// window over the time since it opened (each check here past the redraw interval, liveEvery,
// its least), the rate that flows however long each stream takes, while the exact slices wait
// for the horizon; none before the second completion.
func TestLiveTPSWhileInFlight(t *testing.T) {
	t.Parallel()
	const w0 = int64(1e12)
	for _, c := range []struct {
		name       string
		every, e2e int64 // one completion every `every` ns from w0 + every, each streamed over e2e
	}{
		{"1.8 s streams, one every 600 ms", 600 * ms, 1800 * ms},
		// Ten seconds in, 30 s streams completing one a second: the rate is the 10 that
		// completed over 10 s, not over their 30 s E2E (a third).
		{"30 s streams, one a second", 1000 * ms, 30000 * ms},
	} {
		w := newWindow(w0, 100*ms, 10, 12)
		if got := w.liveTPS(w0 + 50*ms); got != 0 {
			t.Errorf("%s: live TPS before any completion = %v, want 0", c.name, got)
		}
		const tokens = 40
		add := func(i int64) {
			done := w0 + (i+1)*c.every
			w.add(&record.Record{Sent: done - c.e2e, TTFT: 10 * time.Millisecond, E2E: time.Duration(c.e2e),
				OutputTokens: tokens, Status: record.StatusOK})
		}
		flowing := tokens / (float64(c.every) / 1e9) // the tokens/s that flow
		add(0)
		if got := w.liveTPS(w0 + c.every); got != 0 {
			t.Errorf("%s: live TPS after one completion = %v, want 0 (none shown)", c.name, got)
		}
		add(1)
		if got := w.liveTPS(w0 + 2*c.every); math.Abs(got-flowing) > 1e-9*flowing {
			t.Errorf("%s: live TPS after two completions = %v, want %v", c.name, got, flowing)
		}
		const n = 10
		for i := int64(2); i < n; i++ {
			add(i)
		}
		w.add(&record.Record{Sent: w0, E2E: 5 * time.Millisecond, OutputTokens: tokens, Status: record.StatusError})
		if got := w.liveTPS(w0 + n*c.every); math.Abs(got-flowing) > 1e-9*flowing {
			t.Errorf("%s: live TPS = %v, want %v (%d completions of %d tokens in %d ms)", c.name, got, flowing, n, tokens, n*c.every/ms)
		}
		if k := w.decide(w0, 0, 0.05); k != 0 {
			t.Errorf("%s: decided k = %d with the horizon at the window's start", c.name, k)
		}
	}
}

// TestLiveTTFTFromArrival: the live TTFT of a rate level's request is from its scheduled
// arrival (TTFT + the lag before its send), as the rate table's is; a closed-loop request's
// (no schedule) from its send.
func TestLiveTTFTFromArrival(t *testing.T) {
	t.Parallel()
	const w0 = int64(1e12)
	const ttft, lag = 10 * time.Millisecond, 50 * time.Millisecond
	for _, c := range []struct {
		name string
		lag  time.Duration // Sent − Scheduled; 0: no schedule
		want time.Duration
	}{{"rate level", lag, ttft + lag}, {"closed loop", 0, ttft}} {
		w := newWindow(w0, 100*ms, 10, 12)
		sent := w0 + 20*ms
		r := record.Record{Sent: sent, TTFT: ttft, E2E: 100 * time.Millisecond, OutputTokens: 10, Status: record.StatusOK}
		if c.lag > 0 {
			r.Scheduled = sent - int64(c.lag)
		}
		w.add(&r)
		if got := w.liveTTFT(); got != c.want {
			t.Errorf("%s: live TTFT %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPerRecordDefinitions: the boundaries of the per-record window definitions. A window is
// half-open: a request sent (or completed) at w0 is in it, one at w1 is not.
func TestPerRecordDefinitions(t *testing.T) {
	const w0 = int64(1_000_000_000_000)
	w1 := w0 + 100*ms
	rec := func(sent, e2e int64, st record.Status) *record.Record {
		return &record.Record{Sent: w0 + sent*ms, E2E: time.Duration(e2e * ms), Status: st}
	}
	for _, c := range []struct {
		name            string
		r               *record.Record
		sent, completed bool
		busy            int64 // ms
	}{
		{"inside", rec(10, 20, record.StatusOK), true, true, 20},
		{"sent at w0", rec(0, 20, record.StatusOK), true, true, 20},
		{"sent at w1", rec(100, 20, record.StatusOK), false, false, 0},
		{"done at w0", rec(-20, 20, record.StatusOK), false, true, 0},
		{"done at w1", rec(80, 20, record.StatusOK), true, false, 20},
		{"straddles w0", rec(-30, 50, record.StatusOK), false, true, 20},
		{"spans the window", rec(-10, 200, record.StatusOK), false, false, 100},
		{"failed inside", rec(10, 20, record.StatusError), true, false, 20},
		{"before", rec(-50, 10, record.StatusOK), false, false, 0},
	} {
		if got := record.SentInWindow(c.r, w0, w1); got != c.sent {
			t.Errorf("%s: SentInWindow %v, want %v", c.name, got, c.sent)
		}
		if got := record.CompletedInWindow(c.r, w0, w1); got != c.completed {
			t.Errorf("%s: CompletedInWindow %v, want %v", c.name, got, c.completed)
		}
		if got := record.BusyInWindow(c.r, w0, w1); got != c.busy*ms {
			t.Errorf("%s: BusyInWindow %v, want %v", c.name, time.Duration(got), time.Duration(c.busy*ms))
		}
	}
}

// TestWindowTotalsMatchAggregates: the totals accumulated record by record give the window
// aggregates, the slice TPS bit for bit; an empty window gives zeros, not NaN.
func TestWindowTotalsMatchAggregates(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	w0 := int64(1e15)
	w1 := w0 + 700*ms
	var recs []record.Record
	for range 400 {
		e2e := 1 + rng.Int64N(90*ms)
		r := record.Record{Sent: w0 - 100*ms + rng.Int64N(900*ms), TTFT: time.Duration(e2e / 4), E2E: time.Duration(e2e),
			OutputTokens: 1 + rng.IntN(40), Status: record.StatusOK}
		if rng.IntN(3) == 0 {
			r.Chunks = []int64{e2e / 4000, e2e / 2000, e2e / 1000}
		}
		if rng.IntN(5) == 0 {
			r.Status = record.StatusError
		}
		recs = append(recs, r)
	}
	tot := record.NewWindowTotals(w0, w1, 7)
	for i := range recs {
		tot.Add(&recs[i])
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"output TPS", tot.OutputTPS(), record.LevelOutputTPS(recs, w0, w1)},
		{"QPS", tot.QPS(), record.WindowQPS(recs, w0, w1)},
		{"concurrency", tot.Concurrency(), record.AchievedConcurrency(recs, w0, w1)},
		{"output tokens", tot.OutputTokens, record.WindowOutputTokens(recs, w0, w1)},
	} {
		if c.want == 0 || !scalar.EqualWithinRel(c.got, c.want, 1e-12) {
			t.Errorf("%s: totals %v, aggregate %v", c.name, c.got, c.want)
		}
	}
	want := record.SliceTPS(recs, w0, w1, 7)
	for i, v := range tot.SliceTPS() {
		if v != want[i] {
			t.Errorf("slice %d: totals %v TPS, SliceTPS %v", i, v, want[i])
		}
	}
	empty := record.NewWindowTotals(w0, w0, 0)
	for i := range recs {
		empty.Add(&recs[i])
	}
	if empty.OutputTPS() != 0 || empty.QPS() != 0 || empty.Concurrency() != 0 || len(empty.SliceTokens) != 1 {
		t.Errorf("empty window: TPS %v QPS %v concurrency %v, %d slices; want zeros and one slice",
			empty.OutputTPS(), empty.QPS(), empty.Concurrency(), len(empty.SliceTokens))
	}
}
