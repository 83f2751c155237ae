package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/kneecap/kneecap/record"
)

const sec = int64(time.Second)

func us(s ...float64) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v * 1e6)
	}
	return out
}

// handLevel is a level with window [10 s, 20 s) and four records whose numbers are worked out
// by hand in TestSummarizeHandMade.
func handLevel() (record.LevelRun, []record.Record) {
	run := record.LevelRun{Index: 0, Concurrency: 1, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
	recs := []record.Record{
		// Sent in warmup at 9 s; 4 chunks of k = 2 tokens at 9.5, 10, 10.5, 11 s: 3 chunks
		// (6 tokens) inside the window; completes at 11 s (counts for QPS, not for latency).
		{Level: 0, Phase: record.PhaseWarmup, Sent: 9 * sec, TTFT: 500 * time.Millisecond, E2E: 2 * time.Second,
			Chunks: us(0.5, 1, 1.5, 2), PromptTokens: 1000, OutputTokens: 8, Status: record.StatusOK},
		// Sent at 12 s; chunks of k = 2 tokens at 13, 14, 16 s; TPOT = (4−1)/(6−1) = 0.6 s;
		// ITL 500 ms ×2 and 1000 ms ×2.
		{Level: 0, Phase: record.PhaseMeasure, Sent: 12 * sec, TTFT: time.Second, E2E: 4 * time.Second,
			Chunks: us(1, 2, 4), PromptTokens: 100, OutputTokens: 6, Status: record.StatusOK},
		// Sent at 18 s; chunks at 19, 20, 21, 22 s: 1 token inside; completes after W1;
		// TPOT = 3/3 = 1 s; ITL 1000 ms ×3.
		{Level: 0, Phase: record.PhaseMeasure, Sent: 18 * sec, TTFT: time.Second, E2E: 4 * time.Second,
			Chunks: us(1, 2, 3, 4), PromptTokens: 200, OutputTokens: 4, Status: record.StatusOK},
		// A failure sent at 14 s, 100 ms in flight.
		{Level: 0, Phase: record.PhaseMeasure, Sent: 14 * sec, E2E: 100 * time.Millisecond, PromptTokens: 300,
			Status: record.StatusError, ErrorClass: record.ErrHTTP5xx},
		// Another level's record: ignored.
		{Level: 1, Phase: record.PhaseMeasure, Sent: 15 * sec, TTFT: time.Second, E2E: 2 * time.Second,
			Chunks: us(1, 2), PromptTokens: 5000, OutputTokens: 200, Status: record.StatusOK},
	}
	return run, recs
}

func TestSummarizeHandMade(t *testing.T) {
	run, recs := handLevel()
	opts := DefaultOptions()
	opts.SLO = SLO{TTFTP95: 2 * time.Second, TPOTP95: 700 * time.Millisecond}
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), opts)[0]
	check := func(name string, got Float, want, tol float64) {
		t.Helper()
		if !scalar.EqualWithinAbsOrRel(float64(got), want, tol, tol) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("window_s", lv.WindowS, 10, 1e-12)
	check("output_tps (6+6+1 tokens / 10 s)", lv.OutputTPS, 1.3, 1e-12)
	check("qps (2 completions / 10 s)", lv.QPS, 0.2, 1e-12)
	check("input_tps ((100+200) / 10 s: the failure's 300 count none)", lv.InputTPS, 30, 1e-12)
	check("achieved ((1+4+2+0.1) s / 10 s)", lv.AchievedConcurrency, 0.71, 1e-12)
	check("error_rate", lv.ErrorRate, 1.0/3, 1e-12)
	check("ttft mean ms", lv.TTFT.Mean, 1000, 1e-12)
	check("e2e p50 ms", lv.E2E.P50, 4000, 1e-12)
	check("tpot p50 ms (600, 1000)", lv.TPOT.P50, 800, 1e-12)
	check("tpot p90 ms", lv.TPOT.P90, 960, 1e-12)
	check("itl mean ms ((2·500+2·1000+3·1000)/7)", lv.ITL.Mean, 6000.0/7, 1e-12)
	check("itl p50 ms", lv.ITL.P50, 1000, 1e-12)
	check("littles_law_error |0.2·4 − 0.71|/0.71", lv.LittlesLawError, 0.09/0.71, 1e-12)
	check("goodput_qps (both completions meet TTFT ≤ 2 s, TPOT ≤ 700 ms)", lv.GoodputQPS, 0.2, 1e-12)
	check("goodput_tps ((8+6) / 10 s)", lv.GoodputTPS, 1.4, 1e-12)
	check("mean_output_tokens", lv.MeanOutputTokens, 5, 1e-12)
	if lv.Requests != 3 || lv.Errors != 1 || lv.ErrorClasses[string(record.ErrHTTP5xx)] != 1 {
		t.Errorf("requests %d errors %d classes %v, want 3, 1, http_5xx:1", lv.Requests, lv.Errors, lv.ErrorClasses)
	}
	// Invalid on three counts: achieved 0.71 < 0.95, errors 33% > 5%, Little 12.7% > 10%.
	if lv.Valid || len(lv.Notes) != 3 {
		t.Errorf("valid %v notes %q, want invalid with 3 notes", lv.Valid, lv.Notes)
	}
	if !lv.OutputTPSCI95.OK() {
		t.Errorf("output_tps_ci95 = %v, want a value", lv.OutputTPSCI95)
	}

	// A tighter TPOT SLO (500 ms) fails the 12 s request (600 ms) but not the warmup one
	// ((2 − 0.5)/7 = 214 ms).
	opts.SLO.TPOTP95 = 500 * time.Millisecond
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), opts)[0]
	check("goodput_qps with TPOT ≤ 500 ms", lv.GoodputQPS, 0.1, 1e-12)
}

// Without chunk offsets the N_out tokens are spread evenly from TTFT to E2E, and the ITL
// summary gives the ITL mean.
func TestSummarizeWithoutChunks(t *testing.T) {
	run := record.LevelRun{Concurrency: 1, W0: 10 * sec, W1: 20 * sec, Steady: true}
	recs := []record.Record{
		// tokens at 9, 9.5, 10, 10.5, 11 s: 3 inside.
		{Sent: 8 * sec, TTFT: time.Second, E2E: 3 * time.Second, OutputTokens: 5, Status: record.StatusOK,
			ITL: &record.ITLSummary{Count: 4, SumUS: 2e6, MaxUS: 5e5}},
		// tokens at 13..15 s: 5 inside; ITL mean 500 ms.
		{Sent: 12 * sec, TTFT: time.Second, E2E: 3 * time.Second, OutputTokens: 5, Status: record.StatusOK,
			ITL: &record.ITLSummary{Count: 4, SumUS: 2e6, MaxUS: 5e5}},
	}
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if !scalar.EqualWithinAbsOrRel(float64(lv.OutputTPS), 0.8, 1e-12, 1e-12) {
		t.Errorf("output_tps = %v, want 0.8", lv.OutputTPS)
	}
	if !scalar.EqualWithinAbsOrRel(float64(lv.ITL.Mean), 500, 1e-12, 1e-12) || len(lv.Notes) == 0 {
		t.Errorf("itl mean %v notes %q, want 500 and an approximation note", lv.ITL.Mean, lv.Notes)
	}
}

// A closed loop at steady state satisfies Little's law: c workers each back to back with
// E2E = 1 s give QPS = c, achieved concurrency c and a valid level.
func TestSummarizeClosedLoop(t *testing.T) {
	const c, n = 4, 40
	run := record.LevelRun{Concurrency: c, W0: 5 * sec, W1: 25 * sec, Steady: true}
	var recs []record.Record
	for w := range c {
		for s := range n {
			sent := int64(s)*sec + int64(w)*sec/c
			recs = append(recs, record.Record{Concurrency: c, Worker: w, Seq: s, Sent: sent, TTFT: 100 * time.Millisecond,
				E2E: time.Second, Chunks: us(0.1, 0.4, 0.7, 1.0), OutputTokens: 4, PromptTokens: 10, Status: record.StatusOK})
		}
	}
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if !scalar.EqualWithinAbsOrRel(float64(lv.AchievedConcurrency), c, 1e-9, 1e-9) ||
		!scalar.EqualWithinAbsOrRel(float64(lv.QPS), c, 1e-9, 1e-9) ||
		!scalar.EqualWithinAbsOrRel(float64(lv.OutputTPS), 4*c, 1e-9, 1e-9) ||
		!(float64(lv.LittlesLawError) < 1e-9) || !lv.Valid {
		t.Errorf("closed loop: achieved %v qps %v tps %v little %v valid %v notes %q", lv.AchievedConcurrency, lv.QPS, lv.OutputTPS, lv.LittlesLawError, lv.Valid, lv.Notes)
	}
	if !(float64(lv.OutputTPSCI95) < 1e-9) {
		t.Errorf("perfectly regular load: CI half-width %v, want 0", lv.OutputTPSCI95)
	}
	// Not steady only for precision (record.LevelRun.Imprecise): kept valid and flagged; the
	// same level not steady otherwise is excluded.
	run.Steady, run.Imprecise, run.NotSteadyReason = false, true, "only 80 successful completions in the window, below min_requests 100"
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if !lv.Valid || !lv.Imprecise || !slices.ContainsFunc(lv.Notes, func(n string) bool { return strings.HasPrefix(n, "imprecise (kept): ") }) {
		t.Errorf("imprecise level: valid %v imprecise %v notes %q; want valid, flagged", lv.Valid, lv.Imprecise, lv.Notes)
	}
	res := Analyze([]Level{lv}, Meta{}, DefaultOptions())
	if !res.Levels[0].Valid {
		t.Errorf("imprecise level made invalid by Analyze's recheck: notes %q", res.Levels[0].Notes)
	}
	run.Imprecise = false
	if lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]; lv.Valid {
		t.Errorf("not steady, not imprecise: valid, want excluded")
	}
}

func TestSummarizeValidityFlags(t *testing.T) {
	run, recs := handLevel()
	run.Steady = false
	run.Interrupted = true
	run.Client = &record.ClientStats{Bound: true, Reason: "cpu 97%"}
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if lv.Valid || !lv.ClientBound || len(lv.Notes) != 6 {
		t.Errorf("notes %q, want 6 (achieved, errors, steady, little, interrupted, client-bound)", lv.Notes)
	}
	// The note quotes the sweep's reason for "not steady" when it gave one.
	run, recs = handLevel()
	run.Steady, run.NotSteadyReason = false, "only 15 successful completions in the window, below min_requests 20"
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if !slices.ContainsFunc(lv.Notes, func(n string) bool { return strings.HasPrefix(n, "invalid: not steady: only 15 successful") }) {
		t.Errorf("notes %q lack the sweep's not-steady reason", lv.Notes)
	}
	// Empty window and no records: no panic, invalid, NaN numbers.
	out := Summarize(record.GroupRecords([]record.LevelRun{{Concurrency: 2, W0: 5, W1: 5}, {Index: 1, Concurrency: 3, W0: 0, W1: sec, Steady: true}}, nil), Options{})
	if out[0].Valid || out[1].Valid || out[0].OutputTPS.OK() || out[1].TTFT.P50.OK() {
		t.Errorf("degenerate levels: %+v", out)
	}
	if math.IsNaN(float64(out[1].OutputTPS)) {
		t.Errorf("an empty window of 1 s has 0 tokens/s, got NaN")
	}
}

// Hostile records (negative durations, unordered or huge chunk offsets, negative token
// counts, a huge slice count) never make Summarize panic.
func TestSummarizeHostileRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var recs []record.Record
	for i := range 2000 {
		n := rng.IntN(6)
		ch := make([]int64, n)
		for j := range ch {
			ch[j] = rng.Int64N(40e6) - 5e6
		}
		if i%97 == 0 && n > 0 {
			ch[0] = math.MaxInt64 / 2
		}
		recs = append(recs, record.Record{Level: rng.IntN(3) - 1, Sent: rng.Int64N(30 * sec), TTFT: time.Duration(rng.Int64N(4*sec) - sec),
			E2E: time.Duration(rng.Int64N(8*sec) - sec), Chunks: ch, OutputTokens: rng.IntN(20) - 5, PromptTokens: rng.IntN(100),
			Status: []record.Status{record.StatusOK, record.StatusError, record.StatusCancelled}[rng.IntN(3)],
			ITL:    &record.ITLSummary{Count: rng.IntN(5), SumUS: rng.Int64N(1e6)}})
	}
	runs := []record.LevelRun{{Index: 0, Concurrency: 4, W0: 5 * sec, W1: 25 * sec, Slices: 1 << 40}, {Index: 1, Concurrency: 2, W0: 10 * sec, W1: 11 * sec, Steady: true}}
	levels := Summarize(record.GroupRecords(runs, recs), DefaultOptions())
	Analyze(levels, Meta{}, DefaultOptions())
}

// A closed loop with think time keeps fewer requests in flight than its target: c workers each
// sending a 1 s request every 1 s + θ = 0.5 s hold c × 1 ÷ 1.5 in flight (Little's law over a
// worker's cycle). With Options.Think = θ the level is valid; without it the rule expects c and
// the level is invalid.
func TestSummarizeThinkTime(t *testing.T) {
	const c, n = 4, 30
	cycle := 1500 * time.Millisecond
	run := record.LevelRun{Concurrency: c, W0: 6 * sec, W1: 36 * sec, Steady: true}
	var recs []record.Record
	for w := range c {
		for s := range n {
			sent := int64(s)*int64(cycle) + int64(w)*int64(cycle)/c
			recs = append(recs, record.Record{Concurrency: c, Worker: w, Seq: s, Sent: sent, TTFT: 100 * time.Millisecond,
				E2E: time.Second, Chunks: us(0.1, 0.4, 0.7, 1.0), OutputTokens: 4, PromptTokens: 10, Status: record.StatusOK})
		}
	}
	opts := DefaultOptions()
	opts.Think = 500 * time.Millisecond
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), opts)[0]
	if want := c / 1.5; !scalar.EqualWithinAbsOrRel(float64(lv.AchievedConcurrency), want, 1e-9, 1e-9) || !lv.Valid {
		t.Errorf("think 500 ms: achieved %v (want %.3f), valid %v, notes %q", lv.AchievedConcurrency, want, lv.Valid, lv.Notes)
	}
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if lv.Valid || !slices.ContainsFunc(lv.Notes, func(s string) bool { return strings.Contains(s, "< 95% of target 4") }) {
		t.Errorf("no think time given: valid %v, notes %q: want the achieved-concurrency rule to fail", lv.Valid, lv.Notes)
	}
	opts.Think = 2 * time.Second // the level kept more in flight than 4 × 1 ÷ 3: still valid
	if lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), opts)[0]; !lv.Valid {
		t.Errorf("think 2 s: notes %q", lv.Notes)
	}
}

// TestSupersededByRetry: a retry that ran to its end stands for the run it repeats (that one
// superseded, invalid, noted), even when it was steady sooner (a shorter window); one
// interrupted or cut by the budget does not (both stay: a complete run's numbers are not lost
// to a retry cut short).
func TestSupersededByRetry(t *testing.T) {
	run, recs := handLevel()
	run.Steady, run.NotSteadyReason = false, "the steady-state test failed"
	zero := 0
	for _, c := range []struct {
		name       string
		retry      func(*record.LevelRun)
		superseded bool
	}{
		{"complete", func(*record.LevelRun) {}, true},
		{"interrupted", func(r *record.LevelRun) { r.Interrupted = true }, false},
		{"steady sooner", func(r *record.LevelRun) { r.W1 = r.W0 + (run.W1-run.W0)/2 }, true},
		{"cut by the budget", func(r *record.LevelRun) { r.Notes = []string{"cut by the time budget after 2s of measurement"} }, false},
	} {
		again := run
		again.Index, again.RetryOf, again.Retry, again.Steady = 1, &zero, "not steady: the steady-state test failed", true
		again.W0, again.W1 = run.W0, run.W0+2*(run.W1-run.W0)
		c.retry(&again)
		more := make([]record.Record, len(recs))
		for i, r := range recs {
			r.Level = 1
			more[i] = r
		}
		out := Summarize(record.GroupRecords([]record.LevelRun{run, again}, append(slices.Clone(recs), more...)), DefaultOptions())
		if out[0].Superseded != c.superseded || out[1].Superseded || out[1].Retry == "" ||
			c.superseded && (out[0].Valid || !slices.ContainsFunc(out[0].Notes, func(n string) bool { return strings.HasPrefix(n, "superseded: run again as level 1") })) {
			t.Errorf("%s retry: first superseded %v (valid %v, notes %q), retry superseded %v; want first superseded %v",
				c.name, out[0].Superseded, out[0].Valid, out[0].Notes, out[1].Superseded, c.superseded)
		}
	}
}
