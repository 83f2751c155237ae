package sweep

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestResolvableCI: the ratio estimator's interval (Cochran, Sampling Techniques, 3rd ed. 1977,
// §6.3: the relative standard error of R̂ = Σn ÷ Σe is sd(n_i − R̂·e_i) ÷ (n̄·√k)). Twenty
// completions of 10 tokens taking 1 s and 3 s alternately: R̂ = 5, the residuals ±5, sd =
// 5·√(20/19), so the half-width is t(0.975, 19) · 5·√(20/19) ÷ (10·√20) = 2.0930 × 0.11471 =
// 0.24010 (t from R: qt(0.975, 19) = 2.093024). Identical completions resolve anything (0).
func TestResolvableCI(t *testing.T) {
	var c record.CompletionStats
	for i := range 20 {
		c.Add(10, time.Duration(1+2*(i%2))*time.Second)
	}
	if got, want := c.ResolvableCI(), 2.093024*5*math.Sqrt(20.0/19)/(10*math.Sqrt(20)); math.Abs(got-want) > 1e-5 {
		t.Errorf("ResolvableCI = %.6f, want %.6f", got, want)
	}
	// Ten slices against 20 completions: times √F(0.95; 9, 19) = √2.422699 (R: qf(0.95, 9, 19)).
	if got, want := record.CITarget(0.05, 10, c), 2.093024*5*math.Sqrt(20.0/19)/(10*math.Sqrt(20))*math.Sqrt(2.422699); math.Abs(got-want) > 1e-5 {
		t.Errorf("CITarget = %.6f, want %.6f (the resolvable half-width times √F(0.95; 9, 19))", got, want)
	}
	var same record.CompletionStats
	for range 50 {
		same.Add(32, 400*time.Millisecond)
	}
	if got := same.ResolvableCI(); got > 1e-9 {
		t.Errorf("identical completions: ResolvableCI = %g, want 0", got)
	}
	if got := record.CITarget(0.05, 10, same); got != 0.05 {
		t.Errorf("identical completions: CITarget = %g, want ci_target 0.05", got)
	}
	var few record.CompletionStats
	few.Add(10, time.Second)
	few.Add(20, time.Second)
	if got := few.ResolvableCI(); !math.IsNaN(got) || record.CITarget(0.05, 10, few) != 0.05 {
		t.Errorf("two completions: ResolvableCI %g (want NaN), target %g (want 0.05)", got, record.CITarget(0.05, 10, few))
	}
}

// stationaryRecords returns one worker's closed loop over ten 100 ms slices from w0: requests
// of 10 tokens whose E2E alternates between e1 and e2 (the speed of a CPU engine that varies
// request by request), each chunk at its even share of the request, TTFT ttft(i) for request i.
func stationaryRecords(w0 int64, e1, e2 time.Duration, ttft func(i int) time.Duration) []record.Record {
	var recs []record.Record
	at := w0 - int64(e1)
	for i := 0; at < w0+int64(time.Second); i++ {
		e := e1
		if i%2 == 1 {
			e = e2
		}
		r := record.Record{Status: record.StatusOK, Sent: at, TTFT: ttft(i), E2E: e, OutputTokens: 10}
		for j := range 10 {
			r.Chunks = append(r.Chunks, (int64(r.TTFT)+int64(e-r.TTFT)*int64(j)/9)/int64(time.Microsecond))
		}
		recs = append(recs, r)
		at += int64(e)
	}
	return recs
}

// TestImpreciseLevel: a level that reaches max_duration short of min_requests (or of its CI
// target) with no material trend keeps its numbers (Imprecise); one whose throughput drifts
// does not; a TTFT that climbs across the window is latency still rising.
func TestImpreciseLevel(t *testing.T) {
	const w0, slice = int64(1e18), int64(100 * time.Millisecond)
	proto := Protocol{Duration: time.Second, MaxDuration: time.Second, MinRequests: 1000, CITarget: 0.05}
	flat := func(int) time.Duration { return 10 * time.Millisecond }
	recs := stationaryRecords(w0, 30*time.Millisecond, 50*time.Millisecond, flat)
	run := record.LevelRun{W0: w0, W1: w0 + 10*slice}
	notes := finishWindow(&run, recs, proto, slice, endNormal)
	if run.Steady || !run.Imprecise || run.LatencyRising {
		t.Fatalf("stationary, short of min_requests: steady %v imprecise %v rising %v, notes %q; want imprecise only",
			run.Steady, run.Imprecise, run.LatencyRising, notes)
	}
	if !strings.Contains(strings.Join(notes, "; "), "imprecise, not drifting") {
		t.Errorf("notes %q: want the imprecise note", notes)
	}

	// The same at the budget's cut: a short window is not a measured level.
	run = record.LevelRun{W0: w0, W1: w0 + 10*slice}
	finishWindow(&run, recs, proto, slice, endBudget)
	if run.Imprecise {
		t.Errorf("cut by the budget: imprecise, want not")
	}

	// Output drifting up by 40% across the window: a trend, not imprecision.
	var drift []record.Record
	for i := range 10 {
		for j := range 5 + 2*i/5 {
			at := w0 + int64(i)*slice + int64(j)*int64(time.Millisecond)
			drift = append(drift, record.Record{Status: record.StatusOK, Sent: at, TTFT: time.Millisecond, E2E: time.Millisecond, OutputTokens: 10})
		}
	}
	run = record.LevelRun{W0: w0, W1: w0 + 10*slice}
	notes = finishWindow(&run, drift, proto, slice, endNormal)
	if run.Steady || run.Imprecise {
		t.Errorf("drifting: steady %v imprecise %v, notes %q; want neither", run.Steady, run.Imprecise, notes)
	}

	// TTFT climbing 2 ms a request (about 40 ms to 90 ms over the window): latency rising.
	climb := func(i int) time.Duration { return time.Duration(10+2*i) * time.Millisecond }
	recs = stationaryRecords(w0, 60*time.Millisecond, 60*time.Millisecond, climb)
	run = record.LevelRun{W0: w0, W1: w0 + 10*slice}
	notes = finishWindow(&run, recs, proto, slice, endNormal)
	if !run.LatencyRising || !(run.TTFTTrend > latencyRiseMin) || run.TTFTTrendP > record.TrendAlpha {
		t.Errorf("climbing TTFT: rising %v, trend %+.2f p %.3g, notes %q; want rising", run.LatencyRising, run.TTFTTrend, run.TTFTTrendP, notes)
	}
}
