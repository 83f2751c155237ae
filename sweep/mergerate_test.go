package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestKolmogorovQ: the Kolmogorov distribution's survival function at its tabulated points —
// the asymptotic critical values of √n·D at 10%, 5% and 1% (1.224, 1.358, 1.628; Stephens
// 1970, Table 1A) and its median 0.8276 — on both sides of the series' switch at 1.18.
func TestKolmogorovQ(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lambda, want float64 }{
		{0, 1}, {0.8276, 0.5}, {1.2239, 0.10}, {1.3581, 0.05}, {1.6276, 0.01}, {3, 3.05e-8},
	} {
		if got := kolmogorovQ(tc.lambda); math.Abs(got-tc.want) > 2e-4*max(tc.want, 0.01) && math.Abs(got/tc.want-1) > 0.01 {
			t.Errorf("Q_KS(%g) = %.6g, want %.6g", tc.lambda, got, tc.want)
		}
	}
	// Continuous across the switch.
	if a, b := kolmogorovQ(1.18-1e-9), kolmogorovQ(1.18+1e-9); math.Abs(a-b) > 1e-8 {
		t.Errorf("Q_KS jumps at 1.18: %.12g, %.12g", a, b)
	}
}

// sentAt returns n send times (ns) from 0 with the gaps of a's schedule at rate, each sent
// lag(k) after its scheduled time, as records of sent arrivals.
func sentAt(a Arrival, rate float64, n int, lag func(k int) int64) []record.Record {
	g := a.Gaps(rate, 0)
	recs := make([]record.Record, n)
	var t int64
	for k := range recs {
		t += int64(g())
		recs[k] = record.Record{Seq: k, Scheduled: t, Sent: t + lag(k)}
		if k%3 == 0 {
			recs[k].ConnWait = 15 * time.Millisecond
			recs[k].Sent += int64(recs[k].ConnWait)
		}
	}
	return recs
}

// TestKSTest: the statistic D and its p-value against the uniform CDF, references computed by
// hand from Numerical Recipes, 3rd ed., §14.3.3 (D = max over i of i+1/n − F(x_i) and
// F(x_i) − i/n) and §6.14 (Q_KS), with Stephens' factor √n + 0.12 + 0.11/√n (Stephens
// 1970): without it the p-values would be 0.4413, 0.9500 and 0.2700. {0.5, 0.8, 0.9}'s D is
// its D⁻ (its D⁺ is 0.1); {0.1, 0.4, 0.7}'s its D⁺; x_i = max(0, i/100 − 0.09) has D = 0.1
// over 100.
func TestKSTest(t *testing.T) {
	t.Parallel()
	uniform := func(x float64) float64 { return min(1, max(0, x)) }
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = max(0, float64(i)/100-0.09)
	}
	for _, tc := range []struct {
		x    []float64
		d, p float64
	}{
		{[]float64{0.9, 0.5, 0.8}, 0.5, 0.3180},
		{[]float64{0.1, 0.4, 0.7}, 0.3, 0.8959},
		{hundred, 0.1, 0.2562},
	} {
		n := len(tc.x)
		d, p := ksTest(tc.x, uniform)
		if math.Abs(d-tc.d) > 1e-12 || math.Abs(p-tc.p) > 1e-4 {
			t.Errorf("n %d: D %.6f p %.6f, want D %.6f p %.4f", n, d, p, tc.d, tc.p)
		}
	}
}

// TestFitArrivals: the merged send times of a schedule drawn from the process asked for fit
// it — CV near the process's (1 Poisson, 1/√shape gamma) and KS not rejected at 1% — while a
// burstier process's times (gamma of shape 1/4, CV 2) are rejected as Poisson, and the
// constant process gets its CV only. A send lag of 0–60 µs at 50 requests/s (20 ms gaps)
// leaves the fit alone, and so does a 15 ms dial before every third send (ConnWait: the
// network's, not the schedule's).
func TestFitArrivals(t *testing.T) {
	t.Parallel()
	jitter := func(k int) int64 { return int64(k%7) * 10_000 }
	const rate, n = 50, 2000
	for _, tc := range []struct {
		name   string
		drawn  Arrival
		tested Arrival
		cv     float64
		reject bool
	}{
		{"poisson", Arrival{Seed: 3}, Arrival{Seed: 3}, 1, false},
		{"gamma 4", Arrival{Process: ArrivalGamma, Burstiness: 4, Seed: 3}, Arrival{Process: ArrivalGamma, Burstiness: 4}, 0.5, false},
		{"gamma 1/4 as poisson", Arrival{Process: ArrivalGamma, Burstiness: 0.25, Seed: 3}, Arrival{}, 2, true},
	} {
		fit := fitArrivals([][]record.Record{sentAt(tc.drawn, rate, n, jitter)}, tc.tested, rate)
		if fit == nil || fit.Count != n-1 || fit.KSP == nil {
			t.Fatalf("%s: fit %+v, want %d gaps with a KS test", tc.name, fit, n-1)
		}
		// The CV of n gaps has a standard error of about CV/√(2n) (Poisson: 1/√(2n) = 1.6%);
		// gamma 1/4's is wider (heavy tail): 15% of it.
		if math.Abs(fit.CV/tc.cv-1) > 0.15 {
			t.Errorf("%s: CV %.3f, want about %.3f", tc.name, fit.CV, tc.cv)
		}
		if rejected := *fit.KSP < ksAlpha; rejected != tc.reject {
			t.Errorf("%s: KS D %.4f p %.3g: rejected %v, want %v", tc.name, *fit.KSD, *fit.KSP, rejected, tc.reject)
		}
		run := record.LevelRun{Index: 0, OfferedRPS: rate}
		if w := fitWarning(&run, fit); (w != "") != tc.reject || tc.reject && (!strings.Contains(w, "do not fit poisson arrivals") ||
			!strings.Contains(w, "sends bunched") || strings.Contains(w, "clock")) {
			t.Errorf("%s: warning %q", tc.name, w)
		}
	}
	fit := fitArrivals([][]record.Record{sentAt(Arrival{Process: ArrivalConstant}, rate, n, jitter)}, Arrival{Process: ArrivalConstant}, rate)
	if fit == nil || fit.KSP != nil || fit.ExpectedCV != 0 || fit.CV > 0.01 {
		t.Errorf("constant: fit %+v, want a CV near 0 and no KS test", fit)
	}
}

// TestFitArrivalsSameInstant: sends all in one nanosecond (only a garbled file) have no CV:
// no fit, rather than a NaN that levels.json cannot encode.
func TestFitArrivalsSameInstant(t *testing.T) {
	t.Parallel()
	recs := make([]record.Record, 4)
	for i := range recs {
		recs[i] = record.Record{Seq: i, Worker: i, Scheduled: 1e18, Sent: 1e18 + 5}
	}
	fit := fitArrivals([][]record.Record{recs}, Arrival{}, 40)
	if fit != nil {
		t.Errorf("fit %+v, want none", fit)
	}
	if _, err := json.Marshal(record.LevelRun{OfferedRPS: 40, Arrivals: fit}); err != nil {
		t.Errorf("levels.json: %v", err)
	}
}

// scheduleShards builds the records of n shards of a rate level (index 2, rate 40/s, 8
// slots) from the rules of the global schedule: arrival k, due at start + Σ gaps, on shard
// k mod n, in one of its slots, those due before end sent but the last shard's last two,
// never sent (Worker −1). It returns the shards' parts and
// records.
func scheduleShards(a Arrival, n int, start, end int64) ([]record.LevelRun, [][]record.Record) {
	const c, rate = 8, 40.0
	parts := make([]record.LevelRun, n)
	recs := make([][]record.Record, n)
	for i := range n {
		first, count := Workers(c, i, n)
		parts[i] = record.LevelRun{Index: 2, Concurrency: c, OfferedRPS: rate, W1: end, DrainEnd: end + int64(time.Second),
			Shard: &record.ShardPart{Index: i, Count: n, FirstWorker: first, Workers: count}}
	}
	g := a.Gaps(rate, 2)
	t := start
	for k := 0; ; k++ {
		if t += int64(g()); t >= end {
			break
		}
		i := k % n
		first, count := Workers(c, i, n)
		recs[i] = append(recs[i], record.Record{Level: 2, Seq: k, Worker: first + k/n%count, Scheduled: t, Sent: t + 1000})
	}
	// The last shard's last two arrivals were due when issuing stopped, every slot taken:
	// recorded cancelled, unsent (Worker −1), at the stop.
	last := recs[n-1]
	for j := max(0, len(last)-2); j < len(last); j++ {
		last[j].Worker, last[j].Sent, last[j].Status = -1, end, record.StatusCancelled
	}
	return parts, recs
}

// TestCheckSchedule: the shards' records of a rate level are one schedule when every
// arrival due before the end of the load is there once, on its shard, at the replayed time;
// a repeated index, one on the wrong shard or in another shard's slot, a time a nanosecond
// off or outside the level, or a missing index is refused, naming the shard, the level and the index. An index
// missing from an interrupted level, or due only after the load's end, is not.
func TestCheckSchedule(t *testing.T) {
	t.Parallel()
	a := Arrival{Seed: 9}
	const start, end = int64(1e18), int64(1e18 + 3e9)
	gaps := func() func() time.Duration { return a.Gaps(40, 2) }
	span := levelSpan{start: start, end: end + int64(time.Second), loadEnd: end}
	check := func(parts []record.LevelRun, recs [][]record.Record, interrupted bool) error {
		return checkSchedule(context.Background(), &parts[0], parts, recs, span, gaps(), interrupted)
	}
	parts, recs := scheduleShards(a, 2, start, end)
	if len(recs[0]) < 40 || len(recs[1]) < 40 {
		t.Fatalf("%d and %d arrivals, want about 60 each", len(recs[0]), len(recs[1]))
	}
	if err := check(parts, recs, false); err != nil {
		t.Fatalf("one schedule refused: %v", err)
	}
	// Without the schedule's gaps the indices are still checked.
	if err := checkSchedule(context.Background(), &parts[0], parts, recs, span, nil, false); err != nil {
		t.Fatalf("indices refused: %v", err)
	}
	// An arrival due after the load's end, sent by a shard that stopped late, is one of the
	// schedule's too (the arrival before it, the other shard's, is not missing).
	lateParts, late := scheduleShards(a, 2, start, end+int64(200*time.Millisecond))
	for i := range lateParts {
		lateParts[i].W1 = end
	}
	for len(late[0]) > 0 && late[0][len(late[0])-1].Scheduled >= end { // shard 0 stopped on time
		late[0] = late[0][:len(late[0])-1]
	}
	if err := check(lateParts, late, false); err != nil {
		t.Errorf("arrivals after the load's end refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(recs [][]record.Record) [][]record.Record
		want  string
		inter bool
	}{
		{"repeated", func(r [][]record.Record) [][]record.Record {
			r[1] = append(r[1], r[1][5])
			return r
		}, "arrival 11 recorded twice (shards 1/2 and 1/2)", false},
		{"wrong shard", func(r [][]record.Record) [][]record.Record {
			r[1] = append(r[1], r[0][3])
			r[0] = append(r[0][:3], r[0][4:]...)
			return r
		}, "shard 1/2 recorded arrival 6, which is shard 0/2's", false},
		{"other shard's slot", func(r [][]record.Record) [][]record.Record {
			r[1][2].Worker = 0
			return r
		}, "shard 1/2 sent arrival 5 in slot 0, outside its slots 4…7", false},
		{"a nanosecond off", func(r [][]record.Record) [][]record.Record {
			r[0][7].Scheduled++
			return r
		}, "shard 0/2's arrival 14 is scheduled at", false},
		{"after the level", func(r [][]record.Record) [][]record.Record {
			r[1][3].Scheduled = end + int64(time.Hour)
			return r
		}, "shard 1/2's arrival 7 is scheduled at 1000003603000000000, outside the level [1000000000000000000, 1000000004000000000)", false},
		{"missing", func(r [][]record.Record) [][]record.Record {
			r[1] = append(r[1][:4], r[1][5:]...)
			return r
		}, "arrival 9 (shard 1/2's) is missing", false},
		{"the last missing", func(r [][]record.Record) [][]record.Record {
			i := 0 // the shard of the last arrival
			if r[1][len(r[1])-1].Seq > r[0][len(r[0])-1].Seq {
				i = 1
			}
			r[i] = r[i][:len(r[i])-1]
			return r
		}, "is missing, though every shard ran the level to its end", false},
		{"missing, interrupted", func(r [][]record.Record) [][]record.Record {
			r[1] = append(r[1][:4], r[1][5:]...)
			return r
		}, "", true},
	} {
		parts, recs := scheduleShards(a, 2, start, end)
		err := check(parts, tc.edit(recs), tc.inter)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "level 3 (40 requests/s)") || !strings.Contains(err.Error(), "not one schedule")):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCheckScheduleHostile: a shard file cannot make the replay run longer than its records
// warrant. An index beyond N × (the shard's records + 1) is refused before anything is
// replayed — even on an interrupted level whose gaps are 0 ns, where the replay would
// otherwise run to it — a rate or time scale kneecap does not run is refused, the level's
// span and window are bounded by the schedule, not the files (checkSpanAndWindow), and a
// cancelled context stops the replay.
func TestCheckScheduleHostile(t *testing.T) {
	t.Parallel()
	const start, end = int64(1e18), int64(1e18 + 3e9)
	span := levelSpan{start: start, end: end + int64(time.Second), loadEnd: end}
	calls := 0
	zero := func() time.Duration { // 0 ns, and a failure, not a hang, should the bound go
		if calls++; calls > 1e6 {
			t.Fatalf("the replay ran past %d arrivals: the index bound did not hold", calls-1)
		}
		return 0
	}
	parts, recs := scheduleShards(Arrival{Seed: 9}, 2, start, end)
	for _, r := range recs { // every time the schedule's: its gaps are 0 ns
		for j := range r {
			r[j].Scheduled = start
		}
	}
	recs[1] = append(recs[1], record.Record{Level: 2, Seq: 1e12 + 1, Worker: 4, Scheduled: start})
	err := checkSchedule(context.Background(), &parts[0], parts, recs, span, zero, true)
	if err == nil || !strings.Contains(err.Error(), "shard 1/2 recorded arrival 1000000000001 among") {
		t.Errorf("a huge index: %v, want it refused", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parts, recs = scheduleShards(Arrival{Seed: 9}, 2, start, end)
	a := Arrival{Seed: 9}
	if err := checkSchedule(ctx, &parts[0], parts, recs, span, a.Gaps(40, 2), false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want %v", err, context.Canceled)
	}
	checkSpanAndWindow(t)
	for _, tc := range []struct {
		rate, scale float64
		want        string
	}{
		{1e12, 0, "offered rate 1e+12 must be within"},
		{math.NaN(), 0, "offered rate NaN must be > 0"},
		{40, 1e9, "a time scale must be in"},
	} {
		parts, recs := scheduleShards(Arrival{Seed: 9}, 2, start, end)
		run := parts[0]
		run.OfferedRPS, run.TimeScale = tc.rate, tc.scale
		_, err := rateFindings(context.Background(), &run, parts, recs, Protocol{}, &Replay{Arrival: a}, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rate %g, scale %g: %v, want %q", tc.rate, tc.scale, err, tc.want)
		}
	}
}

// scheduledLevel3 is a protocol (warmup 1 s, window 2 s, drain 1 s) and the replay of a
// 2-shard Schedule (arrival seed 9) on which level 3, scheduleShards' level, starts at
// start, 1e18 ns.
func scheduledLevel3() (proto Protocol, replay *Replay, start int64) {
	start = int64(1e18)
	proto = Protocol{Warmup: time.Second, Duration: 2 * time.Second, MaxDuration: 2 * time.Second,
		DrainTimeout: time.Second, MinRequests: 1, CITarget: 0.05}
	sched := &Schedule{Shards: 2}
	sched.Start = time.Unix(0, start).Add(-2 * sched.Period(proto))
	return proto, &Replay{Schedule: sched, Arrival: Arrival{Seed: 9}}, start
}

// checkSpanAndWindow is TestCheckScheduleHostile's bounds from the schedule, not the files:
// a level's span ends at its scheduled start + warmup + the longest window + drain_timeout
// whatever drain end the files claim (an arrival scheduled there is refused, not replayed to),
// and a part's window longer than max_duration is refused before the merged window's slices
// are sized by it.
func checkSpanAndWindow(t *testing.T) {
	t.Helper()
	proto, replay, start := scheduledLevel3()
	a := replay.Arrival
	w0, w1 := start+int64(proto.Warmup), start+int64(proto.Warmup+proto.MaxDuration)
	spanEnd := w1 + int64(proto.DrainTimeout)
	parts, recs := scheduleShards(a, 2, start, w1)
	for i := range parts {
		parts[i].WarmupStart, parts[i].W0, parts[i].DrainEnd = start, w0, math.MaxInt64
	}
	last := recs[1][len(recs[1])-1]
	recs[1] = append(recs[1], record.Record{Level: 2, Seq: last.Seq + 2, Worker: -1, Scheduled: spanEnd})
	run := parts[0]
	run.DrainEnd = math.MaxInt64
	_, err := rateFindings(context.Background(), &run, parts, recs, proto, replay, true)
	if want := fmt.Sprintf("is scheduled at %d, outside the level [%d, %d)", spanEnd, start, spanEnd); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("an arrival at the scheduled drain's end, the files' at MaxInt64: %v, want %q", err, want)
	}
	parts, recs = scheduleShards(a, 2, start, w1)
	for i := range parts {
		parts[i].WarmupStart, parts[i].W0, parts[i].W1 = start, w0, w0+int64(time.Hour)
	}
	_, _, err = MergeLevel(context.Background(), parts, recs, proto, Recordings{}, replay)
	if want := fmt.Sprintf("shard 0/2's window [%d, %d) is longer than the schedule's 2s: not one schedule", w0, w0+int64(time.Hour)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a window of an hour: %v, want %q", err, want)
	}
}

// TestShardLags: each shard's sent arrivals, their schedule lag's p50 and p99 and its clock
// reading; a shard whose p99 is more than twice the others' and 5 ms above is warned of, a
// shard as late as the others, or late by a scheduling hiccup (3 ms), is not.
func TestShardLags(t *testing.T) {
	t.Parallel()
	lagged := func(lags ...time.Duration) []record.Record {
		var out []record.Record
		for i, l := range lags {
			out = append(out, record.Record{Seq: i, Worker: 0, Scheduled: 1e18, Sent: 1e18 + int64(l)})
		}
		return append(out, record.Record{Worker: -1, Scheduled: 1e18, Sent: 2e18}) // cancelled unsent
	}
	ms := time.Millisecond
	parts := []record.LevelRun{{Index: 0, OfferedRPS: 10}, {Clock: &record.ClockOffset{Offset: 5e6, Uncertainty: 2e5}}, {}}
	lags := shardLags(parts, [][]record.Record{lagged(ms, ms, 2*ms), lagged(ms, 2*ms, 3*ms), lagged(ms, ms, 9*ms)})
	want := []record.ShardLag{
		{Index: 0, Requests: 3, LagP50: ms, LagP99: 1980 * time.Microsecond},
		{Index: 1, Requests: 3, LagP50: 2 * ms, LagP99: 2980 * time.Microsecond, ClockOffset: 5e6, ClockUncertainty: 2e5},
		{Index: 2, Requests: 3, LagP50: ms, LagP99: 8840 * time.Microsecond},
	}
	for i := range want {
		if lags[i] != want[i] {
			t.Errorf("shard %d: %+v, want %+v", i, lags[i], want[i])
		}
	}
	w := lagWarnings(&parts[0], lags)
	if len(w) != 1 || !strings.HasPrefix(w[0], "level 1 (10 requests/s): shard 2/3's schedule lag p99 8.84ms is far above the other shards' (2.48ms)") {
		t.Errorf("warnings %q, want one of shard 2/3", w)
	}
}

// TestMergeEndedApartChecked: a rate level whose shard 1 recorded the server's death and
// ended its window 500 ms early is left out (ErrEndedApart) only when the parts are otherwise
// one schedule: an arrival a nanosecond off the replayed schedule, a window longer than
// max_duration or one ending after the schedule's end (by more than half a warmup) is refused
// as "not one schedule" instead. Before, any other difference in W1 was taken for a death.
func TestMergeEndedApartChecked(t *testing.T) {
	t.Parallel()
	proto, replay, start := scheduledLevel3()
	a := replay.Arrival
	w0, w1 := start+int64(proto.Warmup), start+int64(proto.Warmup+proto.MaxDuration)
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		name string
		edit func(parts []record.LevelRun, recs [][]record.Record)
		want string // "": left out as ended apart
	}{
		{"ended apart", func([]record.LevelRun, [][]record.Record) {}, ""},
		{"a nanosecond off", func(_ []record.LevelRun, r [][]record.Record) { r[0][7].Scheduled++ }, "the schedule's is"},
		{"a window of an hour", func(p []record.LevelRun, _ [][]record.Record) { p[0].W1 = p[0].W0 + int64(time.Hour) }, "shard 0/2's window [" + fmt.Sprint(w0) + ", "},
		{"both windows an hour", func(p []record.LevelRun, _ [][]record.Record) {
			p[0].W1 = p[0].W0 + int64(time.Hour)
			p[1].W1, p[1].NotSteadyReason = p[1].W0+int64(time.Hour), ""
		}, "is longer than the schedule's 2s"},
		{"a window after the schedule's", func(p []record.LevelRun, _ [][]record.Record) {
			p[1].W0, p[1].W1 = w1, w1
			p[0].W0, p[0].W1 = w1-ms, w1+int64(proto.Warmup)
		}, fmt.Sprintf("shard 0/2's window ends at %d, after the schedule's end %d", w1+int64(proto.Warmup), w1)},
	} {
		parts, recs := scheduleShards(a, 2, start, w1)
		for i := range parts {
			parts[i].WarmupStart, parts[i].W0 = start, w0
		}
		parts[1].W1 -= 500 * ms
		parts[1].NotSteadyReason = reasonSilent
		tc.edit(parts, recs)
		_, _, err := MergeLevel(context.Background(), parts, recs, proto, Recordings{}, replay)
		switch {
		case tc.want == "" && !errors.Is(err, ErrEndedApart):
			t.Errorf("%s: %v, want %v", tc.name, err, ErrEndedApart)
		case tc.want != "" && (err == nil || errors.Is(err, ErrEndedApart) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "not one schedule")):
			t.Errorf("%s: %v, want %q, not one schedule", tc.name, err, tc.want)
		}
	}
}
