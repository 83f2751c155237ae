package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// demoOpenLoop is the open loop of the engine tests: 64-token requests (capacity 41.67
// requests/s on the demo engine), a 3 s warmup, a long enough drain that every request ends,
// and 20 µs of client lag.
func demoOpenLoop(window time.Duration, seed uint64) openLoop {
	return openLoop{nOut: 64, warm: 3 * time.Second, window: window, drain: 300 * time.Second, lag: 20 * time.Microsecond, seed: seed}
}

// TestRateCapacityBatchingEngine checks the capacity found on an arrival-rate sweep of the
// batching engine against its truth, IdealTPS(S) ÷ N_out = 2666.67 ÷ 64 = 41.67 requests/s
// (DESIGN §6): within 2%, its 95% interval containing it, capacity_tps within 2% of X(S);
// the levels at ≤ 0.9 × capacity sustained, those at ≥ 1.3 × not (and kept valid); the TTFT
// blow-up rate between 0.75 and 1.3 × capacity; latencies from the scheduled time at least
// those from the send time (by the 20 µs lag); the SLO point at most the capacity.
func TestRateCapacityBatchingEngine(t *testing.T) {
	e := demoEngine()
	truth := e.capacity(64)
	fracs := []float64{0.25, 0.5, 0.75, 0.9, 1.1, 1.3, 2}
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			var rates []float64
			for _, f := range fracs {
				rates = append(rates, f*truth)
			}
			opts := DefaultOptions()
			opts.SLO = SLO{TTFTP95: 500 * time.Millisecond}
			opts.Plan = Plan{QPS: 1000}
			levels := Summarize(e.sweepRates(demoOpenLoop(10*time.Second, seed), rates...), opts)
			res := Analyze(levels, Meta{}, opts)
			rr := res.Rate
			if res.Mode != record.ModeRate || rr == nil {
				t.Fatalf("mode %q, rate %v: want an arrival-rate result", res.Mode, rr)
			}
			if !within(float64(rr.CapacityRPS), truth, 0.02) {
				t.Errorf("capacity %.3f requests/s, want %.3f ± 2%% (%s)", float64(rr.CapacityRPS), truth, rr.CapacityReason)
			}
			if lo, hi := float64(rr.CapacityInterval[0]), float64(rr.CapacityInterval[1]); !(lo <= truth && truth <= hi) {
				t.Errorf("capacity interval [%.3f, %.3f] does not contain the truth %.3f", lo, hi, truth)
			}
			if x := e.cfg.IdealTPS(32); !within(float64(rr.CapacityTPS), x, 0.02) {
				t.Errorf("capacity %.0f tokens/s, want X(S) = %.0f ± 2%%", float64(rr.CapacityTPS), x)
			}
			for i, l := range res.Levels {
				f := fracs[i]
				if !l.Valid {
					t.Errorf("level %.2f × capacity invalid: %v", f, l.Notes)
				}
				if f <= 0.9 && !l.Sustainable || f >= 1.3 && l.Sustainable {
					t.Errorf("level %.2f × capacity: sustainable %v (backlog %.2f requests/s)", f, l.Sustainable, float64(l.BacklogGrowthRPS))
				}
				if l.TTFTScheduled.P50 < l.TTFT.P50 || l.E2EScheduled.P95 < l.E2E.P95 {
					t.Errorf("level %.2f: from the scheduled time TTFT p50 %v, E2E p95 %v below those from send %v, %v", f,
						l.TTFTScheduled.P50, l.E2EScheduled.P95, l.TTFT.P50, l.E2E.P95)
				}
			}
			if b := float64(rr.TTFTBlowupRPS); !(b >= 0.75*truth && b <= 1.3*truth) || rr.TTFTBlowupStat != "p50" {
				t.Errorf("TTFT blow-up at %.2f requests/s (%s), want within [0.75, 1.3] × %.2f", b, rr.TTFTBlowupStat, truth)
			}
			if rr.LatencyFrom != "scheduled" {
				t.Errorf("latency_from %q, want scheduled", rr.LatencyFrom)
			}
			if s := float64(rr.SLORPS); !(s > 0.5*truth && s <= float64(rr.CapacityRPS)) || res.SLO.Limit == "" {
				t.Errorf("SLO point %.2f requests/s (limit %q), want in (0.5 × truth, capacity]", s, res.SLO.Limit)
			}
			if c := res.Capacity; c == nil || float64(c.ReplicasAtSLO) != math.Ceil(1000/float64(rr.SLORPS)) ||
				float64(c.ReplicasAtCapacity) != math.Ceil(1000/float64(rr.CapacityRPS)) {
				t.Errorf("capacity plan %+v: want ⌈1000 ÷ slo_rps⌉ and ⌈1000 ÷ capacity_rps⌉", c)
			}
		})
	}
}

// TestRateGeometricPlan: doubling rates 4 … 64 bracket the demo engine's 41.67 requests/s
// between 32 and 64; the completion rate of the one unsustained level puts it within 2%.
func TestRateGeometricPlan(t *testing.T) {
	e := demoEngine()
	truth := e.capacity(64)
	res := Analyze(Summarize(e.sweepRates(demoOpenLoop(10*time.Second, 7), 4, 8, 16, 32, 64), DefaultOptions()), Meta{}, DefaultOptions())
	rr := res.Rate
	// The bracket holds the rates the levels offered 32 and 64 realised (DESIGN §4.15).
	if b := rr.CapacityBracket; len(b) != 2 || b[0] != res.Levels[3].RealizedRPS || b[1] != res.Levels[4].RealizedRPS || rr.CapacityBound != "" {
		t.Fatalf("bracket %v (bound %q), want the realised rates of the levels offered 32 and 64, [%v, %v]", rr.CapacityBracket, rr.CapacityBound,
			res.Levels[3].RealizedRPS, res.Levels[4].RealizedRPS)
	}
	if !within(float64(rr.CapacityRPS), truth, 0.02) {
		t.Errorf("capacity %.3f, want %.3f ± 2%%", float64(rr.CapacityRPS), truth)
	}
	if lo, hi := float64(rr.CapacityInterval[0]), float64(rr.CapacityInterval[1]); !(lo <= truth && truth <= hi) {
		t.Errorf("interval [%.3f, %.3f] does not contain %.3f", lo, hi, truth)
	}
}

// TestRateSustainableRule measures the sustainability rule of Summarize (DESIGN §4.15) on the engine
// models, 20 seeds a rate, each window extended as the live clock does (up to 6 × until the
// realised rate is within 5% of the offered) and the server's waiting count scraped every
// second: no level at 0.5–0.9 × capacity is called unsustainable, on the demo engine
// (capacity IdealTPS(32) ÷ 64 = 41.67 requests/s) with 5 and 10 s windows nor on a 4-slot
// server of 0.72 s requests (4 ÷ 0.72 = 5.56 requests/s) with 10 s windows; every level at 1.5
// × is; the demo engine's at 1.2 × with 10 s windows are (40 of 40 measured); and on the
// 4-slot server at least 16 of 20 at 1.26 × — the 6.98 requests/s over 5.56 — with 10 s
// windows (190 of 200 measured; 6 of 40 under the rule against the offered rate).
func TestRateSustainableRule(t *testing.T) {
	demo := demoEngine()
	slots := slotEngine{slots: 4, ttft: 100 * time.Millisecond, itl: 20 * time.Millisecond}
	count := func(e engine, nOut int, truth, f float64, window time.Duration) int {
		n := 0
		for seed := uint64(1); seed <= 20; seed++ {
			o := openLoop{rate: f * truth, nOut: nOut, warm: 5 * time.Second, window: window, maxWindow: 6 * window,
				drain: 300 * time.Second, lag: 20 * time.Microsecond, seed: seed, scrape: time.Second}
			if l := Summarize([]record.Level{runOpenLoop(e, o, 0)}, DefaultOptions())[0]; !l.Sustainable {
				n++
			}
		}
		return n
	}
	cases := []struct {
		name   string
		e      engine
		nOut   int
		truth  float64
		window time.Duration
		// least is the least number of the 20 levels at each multiple of the capacity that
		// must be called unsustainable; multiples ≤ 0.9 must have none.
		least map[float64]int
	}{
		{"demo engine, 5 s", demo, 64, demo.capacity(64), 5 * time.Second, map[float64]int{0.5: 0, 0.75: 0, 0.9: 0, 1.5: 20}},
		{"demo engine, 10 s", demo, 64, demo.capacity(64), 10 * time.Second, map[float64]int{0.5: 0, 0.75: 0, 0.9: 0, 1.2: 20, 1.5: 20}},
		{"4 slots, 10 s", slots, 32, slots.capacity(32), 10 * time.Second, map[float64]int{0.5: 0, 0.75: 0, 0.9: 0, 1.26: 16, 1.5: 20}},
	}
	for _, c := range cases {
		for f, least := range c.least {
			n := count(c.e, c.nOut, c.truth, f, c.window)
			if f <= 0.9 && n > 0 || n < least {
				t.Errorf("%s: %d of 20 levels at %.2f × capacity called unsustainable, want %s", c.name, n, f,
					map[bool]string{true: "0", false: fmt.Sprintf("≥ %d", least)}[f <= 0.9])
			}
		}
	}
}

// TestRateSustainableTable prints the measured rates of DESIGN §4.15's sustainability rule:
// per engine model and window, how many of seeds levels at each multiple of the capacity are
// called unsustainable, with the server's waiting count scraped and without (in brackets).
// It measures rather than checks (TestRateSustainableRule checks): run it with
// KNEECAP_MEASURE=seeds (40 for the figures of §4.15).
func TestRateSustainableTable(t *testing.T) {
	seeds, _ := strconv.Atoi(os.Getenv("KNEECAP_MEASURE"))
	if seeds <= 0 {
		t.Skip("a measurement: KNEECAP_MEASURE=40 prints DESIGN §4.15's table")
	}
	demo := demoEngine()
	slots := slotEngine{slots: 4, ttft: 100 * time.Millisecond, itl: 20 * time.Millisecond}
	for _, e := range []struct {
		name  string
		e     engine
		nOut  int
		truth float64
	}{{"4 slots, 0.72 s", slots, 32, slots.capacity(32)}, {"demo engine", demo, 64, demo.capacity(64)}} {
		for _, w := range []time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second} {
			line := fmt.Sprintf("%s, %v windows:", e.name, w)
			for _, f := range []float64{0.5, 0.75, 0.9, 0.95, 1.05, 1.1, 1.2, 1.26, 1.3, 1.5, 2} {
				var n [2]int
				for seed := uint64(1); seed <= uint64(seeds); seed++ {
					for i, scrape := range []time.Duration{time.Second, 0} {
						o := openLoop{rate: f * e.truth, nOut: e.nOut, warm: 5 * time.Second, window: w, maxWindow: 6 * w,
							drain: 300 * time.Second, lag: 20 * time.Microsecond, seed: seed, scrape: scrape}
						if l := Summarize([]record.Level{runOpenLoop(e.e, o, 0)}, DefaultOptions())[0]; !l.Sustainable {
							n[i]++
						}
					}
				}
				line += fmt.Sprintf(" %g×: %d (%d)", f, n[0], n[1])
			}
			t.Log(line)
		}
	}
}

// TestRateCapacitySlotServer runs the failing plan — --rates auto from a probed max
// QPS of 5.37, up to 1.3 × it, 6.98 requests/s — against a 4-slot server of 0.72 s requests
// (capacity 4 ÷ (100 ms + 31 × 20 ms) = 5.56 requests/s), 10 s windows, 40 seeds. As the
// issue's run did (windows not extended, no server metrics) and as a live sweep now does
// (extended to the realised rate, the waiting count scraped): the capacity within 10% of the
// truth (measured within 7.3% and 3.1%), its interval containing it, and never a capacity,
// bound or lower interval end above the largest completion rate measured (the run
// said "at least 6.98").
func TestRateCapacitySlotServer(t *testing.T) {
	e := slotEngine{slots: 4, ttft: 100 * time.Millisecond, itl: 20 * time.Millisecond}
	truth := e.capacity(32)
	rates := sweep.PlanRates(5.37)
	for _, live := range []bool{false, true} {
		bounded := 0
		for seed := uint64(1); seed <= 40; seed++ {
			o := openLoop{nOut: 32, warm: 5 * time.Second, window: 10 * time.Second, drain: 300 * time.Second, lag: 20 * time.Microsecond, seed: seed}
			if live {
				o.maxWindow, o.scrape = 60*time.Second, time.Second
			}
			res := Analyze(Summarize(sweepModel(e, o, rates...), DefaultOptions()), Meta{}, DefaultOptions())
			rr := res.Rate
			ymax := 0.0
			for _, l := range res.Levels {
				if l.Valid {
					ymax = math.Max(ymax, float64(l.CompletionRate()))
				}
			}
			c, lo, hi := float64(rr.CapacityRPS), float64(rr.CapacityInterval[0]), float64(rr.CapacityInterval[1])
			if !within(c, truth, 0.1) || !(lo <= truth) || rr.CapacityInterval[1].OK() && !(truth <= hi) {
				t.Errorf("live %v seed %d: capacity %.3f [%.3f, %.3f] (%s), want %.3f ± 10%% inside its interval (%s)", live, seed, c, lo, hi,
					rr.CapacityBound, truth, rr.CapacityReason)
			}
			if c > ymax || lo > ymax {
				t.Errorf("live %v seed %d: capacity %.3f, interval from %.3f: above the largest completion rate %.3f", live, seed, c, lo, ymax)
			}
			if rr.CapacityBound == "" {
				bounded++
			}
		}
		// Live, the levels past capacity are found unsustainable and bracket the capacity
		// (40 of 40 measured); as the run, 16 of 40.
		if live && bounded < 36 {
			t.Errorf("live: %d of 40 sweeps bracketed the capacity between a sustained and an unsustained level, want ≥ 36", bounded)
		}
	}
}

// TestRateInFlightCap: a client cap of 16 requests in flight limits the system to 16 of the
// engine's 32 slots, so the capacity is IdealTPS(16) ÷ N_out = 2000 ÷ 64 = 31.25 requests/s;
// past it the requests wait client-side, which the latencies from the scheduled time count and
// those from the send time do not.
func TestRateInFlightCap(t *testing.T) {
	e := demoEngine()
	truth := e.cfg.IdealTPS(16) / 64
	o := demoOpenLoop(10*time.Second, 3)
	o.maxConcurrent = 16
	levels := Summarize(e.sweepRates(o, 0.5*truth, 0.8*truth, 1.2*truth, 1.6*truth), DefaultOptions())
	res := Analyze(levels, Meta{}, DefaultOptions())
	if c := float64(res.Rate.CapacityRPS); !within(c, truth, 0.03) {
		t.Errorf("capacity %.2f, want %.2f ± 3%% (%s)", c, truth, res.Rate.CapacityReason)
	}
	over := res.Levels[3]
	if over.Sustainable || !(float64(over.ScheduleLag.P50) > 100) || !(over.TTFTScheduled.P50 > 10*over.TTFT.P50) {
		t.Errorf("1.6 × capacity: sustainable %v, lag p50 %v ms, TTFT p50 from scheduled %v vs from send %v: want the client-side wait in the first only",
			over.Sustainable, over.ScheduleLag.P50, over.TTFTScheduled.P50, over.TTFT.P50)
	}
	if over.Concurrency != 16 {
		t.Errorf("concurrency %d, want the cap 16", over.Concurrency)
	}
}

// TestSummarizeRateHandMade works a rate level out by hand: window [10 s, 20 s), offered 0.5
// requests/s.
func TestSummarizeRateHandMade(t *testing.T) {
	run := record.LevelRun{Index: 0, OfferedRPS: 0.5, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
	ms := time.Millisecond
	recs := []record.Record{
		// Scheduled before the window, sent inside it: not an arrival of the window.
		{Scheduled: 9*sec + 900*int64(ms), Sent: 10*sec + 100*int64(ms), TTFT: 50 * ms, E2E: 500 * ms, OutputTokens: 10, Status: record.StatusOK},
		// Arrivals: lag 1 ms, TTFT 100 ms, E2E 1 s.
		{Scheduled: 11 * sec, Sent: 11*sec + int64(ms), TTFT: 100 * ms, E2E: time.Second, OutputTokens: 10, Status: record.StatusOK},
		// lag 3 ms, TTFT 200 ms, E2E 2 s.
		{Scheduled: 14 * sec, Sent: 14*sec + 3*int64(ms), TTFT: 200 * ms, E2E: 2 * time.Second, OutputTokens: 10, Status: record.StatusOK},
		// lag 2 ms, failed.
		{Scheduled: 16 * sec, Sent: 16*sec + 2*int64(ms), E2E: 10 * ms, Status: record.StatusError, ErrorClass: record.ErrHTTP5xx},
		// Scheduled inside, sent after the window (lag 1.5 s): an arrival of the window.
		{Scheduled: 19 * sec, Sent: 20*sec + 500*int64(ms), TTFT: 300 * ms, E2E: 3 * time.Second, OutputTokens: 10, Status: record.StatusOK},
	}
	lv := Summarize([]record.Level{{Run: run, Records: recs}}, DefaultOptions())[0]
	if !lv.IsRate() || lv.Requests != 4 || lv.Errors != 1 {
		t.Fatalf("rate %v, requests %d, errors %d: want the 4 arrivals, 1 failed", lv.IsRate(), lv.Requests, lv.Errors)
	}
	// Sent in the window: the first three and the failure, 4 ÷ 10 s.
	if lv.AchievedRPS != 0.4 {
		t.Errorf("achieved %v, want 0.4", lv.AchievedRPS)
	}
	// Lags of the arrivals 1, 3, 2, 1500 ms: p50 2.5 (type 7), mean 376.5.
	if lv.ScheduleLag.P50 != 2.5 || lv.ScheduleLag.Mean != 376.5 {
		t.Errorf("lag %+v, want p50 2.5, mean 376.5", lv.ScheduleLag)
	}
	// TTFT from send 100, 200, 300; from the scheduled time 101, 203, 1800.
	if lv.TTFT.P50 != 200 || lv.TTFTScheduled.P50 != 203 || lv.TTFTScheduled.Mean != (101+203+1800)/3.0 {
		t.Errorf("TTFT p50 %v, from scheduled %+v", lv.TTFT.P50, lv.TTFTScheduled)
	}
	if lv.E2EScheduled.P50 != 2003 {
		t.Errorf("E2E p50 from scheduled %v, want 2003", lv.E2EScheduled.P50)
	}
	if !lv.Sustainable {
		t.Errorf("unsustainable: %v", lv.Notes)
	}
}

// TestBacklogGrowth: arrivals every 100 ms from 0 that each take 5 s (the window [10 s, 20 s)
// holds a backlog of 50 throughout) have no growth; arrivals every 100 ms served one every
// 200 ms (a queue) grow the backlog by 5 requests/s, and the level is unsustainable.
func TestBacklogGrowth(t *testing.T) {
	var flat, queue []record.Record
	for i := range 300 {
		at := int64(i) * sec / 10
		flat = append(flat, record.Record{Scheduled: at, Sent: at, E2E: 5 * time.Second, Status: record.StatusOK})
		done := int64(i+1) * sec / 5
		queue = append(queue, record.Record{Scheduled: at, Sent: at, E2E: time.Duration(done - at), Status: record.StatusOK})
	}
	if b := backlogOf(flat, 10*sec, 20*sec); math.Abs(b.slope) > 0.2 || math.Abs(b.mean-50) > 1 {
		t.Errorf("flat backlog: slope %.3f, mean %.1f; want 0 and 50", b.slope, b.mean)
	}
	b := backlogOf(queue, 10*sec, 20*sec)
	if math.Abs(b.slope-5) > 0.1 {
		t.Errorf("queue: slope %.3f, want 5 requests/s", b.slope)
	}
	if why := (queueTrend{backlog: b}).unsustainable(10, 10, 5); why == "" {
		t.Errorf("queue growing 5 requests/s at 10 offered: not called unsustainable (%+v)", b)
	}
}

// rateLevel builds a valid steady rate level offered x requests/s that completed y requests/s
// of 100-token requests over a 30 s window, its TTFT p50 (and p95, 1.5×) in ms.
func rateLevel(x, y, ttft float64, sustainable bool) Level {
	l := Level{Concurrency: 0, RateLevel: NewRateLevel(x), ErrorRate: 0, OutputTPS: Float(y * 100), OutputTPSCI95: Float(y),
		QPS: Float(y), InputTPS: NaN(), GoodputQPS: Float(y), GoodputTPS: Float(y * 100), AchievedConcurrency: NaN(),
		LittlesLawError: NaN(), MeanOutputTokens: 100, WindowS: 30, Steady: true, Valid: true,
		TTFT: Latency{Mean: Float(ttft), P50: Float(ttft), P90: Float(ttft * 1.3), P95: Float(ttft * 1.5), P99: Float(ttft * 2)},
		TPOT: NoLatency(), ITL: NoLatency(), E2E: NoLatency(), TTFA: NoLatency(), InputTokens: NoTokenLengths(), OutputTokens: NoTokenLengths(),
		MeanReasoningTokens: NaN()}
	l.AchievedRPS, l.Sustainable = Float(x), sustainable
	l.BacklogGrowthRPS = 0
	if !sustainable {
		l.BacklogGrowthRPS = Float(x - y)
	}
	return l
}

// TestAnalyzeRateLevels reads the rate answers off levels whose truth is known: a replica of
// capacity 10 requests/s (completion rate min(x, 10)), TTFT 50 ms up to 8 requests/s.
func TestAnalyzeRateLevels(t *testing.T) {
	std := func() []Level {
		return []Level{rateLevel(2, 2, 50, true), rateLevel(4, 4, 50, true), rateLevel(8, 8, 60, true),
			rateLevel(12, 10, 900, false), rateLevel(16, 10, 3000, false)}
	}
	opts := DefaultOptions()
	opts.SLO = SLO{TTFTP95: 300 * time.Millisecond}
	cases := []struct {
		name   string
		levels []Level
		check  func(t *testing.T, res Result)
	}{
		{"bracketed", std(), func(t *testing.T, res Result) {
			r := res.Rate
			if r.CapacityRPS != 10 || r.CapacityBound != "" || r.CapacityBracket[0] != 8 || r.CapacityBracket[1] != 12 {
				t.Errorf("capacity %v bound %q bracket %v, want 10 between 8 and 12", r.CapacityRPS, r.CapacityBound, r.CapacityBracket)
			}
			if r.CapacityTPS != 1000 {
				t.Errorf("capacity TPS %v, want 1000", r.CapacityTPS)
			}
			// TTFT p95 90 ms at 8, 1350 at 12: 300 ms at t = 210 ÷ 1260, 8 + 4t = 8.667.
			if !within(float64(r.SLORPS), 8+4*210.0/1260, 1e-9) || res.SLO.Limit != "ttft_p95" {
				t.Errorf("SLO point %v (%s), want 8.667 (ttft_p95)", r.SLORPS, res.SLO.Limit)
			}
			if !within(float64(r.SLOGoodputRPS), float64(r.SLORPS), 1e-9) {
				t.Errorf("goodput %v, want the SLO rate (every request good)", r.SLOGoodputRPS)
			}
		}},
		{"every level sustained", std()[:3], func(t *testing.T, res Result) {
			r := res.Rate
			if r.CapacityRPS != 8 || r.CapacityBound != "at_least" || r.CapacityInterval[1].OK() {
				t.Errorf("capacity %v bound %q interval %v, want ≥ 8", r.CapacityRPS, r.CapacityBound, r.CapacityInterval)
			}
			if !strings.Contains(strings.Join(res.Warnings, "\n"), "lies beyond 8.00 requests/s") {
				t.Errorf("warnings %q lack the capacity beyond the range", res.Warnings)
			}
		}},
		{"none sustained", std()[3:], func(t *testing.T, res Result) {
			r := res.Rate
			if r.CapacityRPS != 10 || r.CapacityBound != "at_most" || r.CapacityInterval[0].OK() {
				t.Errorf("capacity %v bound %q interval %v, want ≤ 12 at the completion rate 10", r.CapacityRPS, r.CapacityBound, r.CapacityInterval)
			}
			if r.SLORPS.OK() || res.SLO.Limit != "ttft_p95" {
				t.Errorf("SLO point %v (%q), want none, ttft_p95 binding", r.SLORPS, res.SLO.Limit)
			}
		}},
		{"completion above the bracket", func() []Level {
			ls := std()
			ls[3], ls[4] = rateLevel(12, 13, 900, false), rateLevel(16, 13, 3000, false)
			return ls
		}(), func(t *testing.T, res Result) {
			if r := res.Rate; r.CapacityRPS != 12 || !strings.Contains(r.CapacityReason, "above the smallest unsustained rate") {
				t.Errorf("capacity %v (%s), want clamped to 12", r.CapacityRPS, r.CapacityReason)
			}
		}},
		{"completion below the last sustained level", func() []Level {
			ls := std()
			ls[2] = rateLevel(8, 7, 60, true) // called sustained, completed 7 of the 8 offered
			ls[3], ls[4] = rateLevel(12, 6, 900, false), rateLevel(16, 6, 3000, false)
			return ls
		}(), func(t *testing.T, res Result) {
			want := "below the 8.00 requests/s arriving at the last level the backlog test called sustained, which completed 7.00/s; the next, 12.0 requests/s, was not sustained"
			if r := res.Rate; r.CapacityRPS != 7 || !strings.Contains(r.CapacityReason, want) || strings.Contains(r.CapacityReason, "between the sustained") {
				t.Errorf("capacity %v (%s), want 7 and %q (not a bracket it lies outside)", r.CapacityRPS, r.CapacityReason, want)
			}
		}},
		{"not monotone", func() []Level {
			ls := std()
			ls[1].Sustainable = false // a stray verdict at 4
			return ls
		}(), func(t *testing.T, res Result) {
			if r := res.Rate; r.CapacityRPS != 10 || r.CapacityBracket[0] != 8 {
				t.Errorf("capacity %v bracket %v, want 10 above 8 (the stray verdict at 4 outvoted)", r.CapacityRPS, r.CapacityBracket)
			}
			if !strings.Contains(strings.Join(res.Warnings, "\n"), "not monotone") {
				t.Errorf("no warning about the stray verdict: %q", res.Warnings)
			}
		}},
		{"table without backlog", func() []Level {
			ls := std()
			for i := range ls {
				ls[i].Sustainable, ls[i].BacklogGrowthRPS = true, NaN()
			}
			return ls
		}(), func(t *testing.T, res Result) {
			if res.Levels[3].Sustainable || res.Rate.CapacityRPS != 10 {
				t.Errorf("levels 12 and 16 complete 10: want them unsustainable by their deficit, capacity 10; got %v, %v", res.Levels[3].Sustainable, res.Rate.CapacityRPS)
			}
		}},
		{"SLO met past capacity", func() []Level {
			ls := std()
			ls[3].TTFT.P95 = 200 // an unsustainable level can meet the SLO over its window
			return ls
		}(), func(t *testing.T, res Result) {
			if r := res.Rate; r.SLORPS != 10 || res.SLO.Limit != "capacity" {
				t.Errorf("SLO point %v (%s), want the capacity 10", r.SLORPS, res.SLO.Limit)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(tc.levels)
			res := Analyze(tc.levels, Meta{}, opts)
			if after, _ := json.Marshal(tc.levels); string(after) != string(before) {
				t.Error("Analyze modified its input levels")
			}
			tc.check(t, res)
		})
	}
}

// TestRateIgnoresClosedLevel: a closed-loop level among a rate run's levels — invalid, its
// TTFT still rising and breaching the SLO — is dropped with a warning and is no evidence on
// the rate axis: the blow-up and the SLO point are those of the rate levels alone (the closed
// loop's rising-level and excluded-breach rules, DESIGN §4.4 and §4.7, do not apply).
func TestRateIgnoresClosedLevel(t *testing.T) {
	rates := []Level{rateLevel(2, 2, 50, true), rateLevel(4, 4, 50, true), rateLevel(8, 8, 60, true),
		rateLevel(12, 10, 900, false), rateLevel(16, 10, 3000, false)}
	closed := Level{Concurrency: 1, OutputTPS: 100, Valid: false, LatencyRising: true, Requests: 200,
		Notes: []string{"invalid: not steady"}, TTFT: Latency{Mean: 5000, P50: 5000, P90: 5000, P95: 5000, P99: 5000},
		TPOT: NoLatency(), ITL: NoLatency(), E2E: NoLatency(), ErrorRate: 0, QPS: 1, GoodputQPS: 1}
	opts := DefaultOptions()
	opts.SLO = SLO{TTFTP95: 300 * time.Millisecond}
	want := Analyze(rates, Meta{}, opts)
	got := Analyze(append(slices.Clone(rates), closed), Meta{}, opts)
	if !want.Rate.TTFTBlowupRPS.OK() || !want.Rate.SLORPS.OK() {
		t.Fatalf("the rate levels alone: blow-up %v, SLO point %v; want both found", want.Rate.TTFTBlowupRPS, want.Rate.SLORPS)
	}
	if got.Rate.TTFTBlowupRPS != want.Rate.TTFTBlowupRPS || got.Rate.SLORPS != want.Rate.SLORPS || got.SLO.Limit != want.SLO.Limit ||
		got.SLO.Bound != "" || got.SLO.MaxConcurrency.OK() {
		t.Errorf("with a closed-loop level: blow-up %v, SLO point %v (%s, bound %q, max_concurrency %v); want %v, %v (%s) as without it",
			got.Rate.TTFTBlowupRPS, got.Rate.SLORPS, got.SLO.Limit, got.SLO.Bound, got.SLO.MaxConcurrency,
			want.Rate.TTFTBlowupRPS, want.Rate.SLORPS, want.SLO.Limit)
	}
	if w := strings.Join(got.Warnings, "\n"); !strings.Contains(w, "a closed-loop level among the levels of an arrival-rate run") || strings.Contains(w, "excluded level") {
		t.Errorf("warnings %q: want the closed level dropped, no excluded-level evidence", got.Warnings)
	}
}

// TestRateTTFTStatFallback: a table with only a TTFT mean finds the blow-up on the mean and
// says so; one with only p95 on p95.
func TestRateTTFTStatFallback(t *testing.T) {
	for _, stat := range []string{"mean", "p95"} {
		var ls []Level
		for i, ttft := range []float64{50, 50, 52, 55, 400, 1500} {
			l := rateLevel(float64(2*(i+1)), math.Min(float64(2*(i+1)), 9), ttft, i < 4)
			m, p95 := l.TTFT.Mean, l.TTFT.P95
			l.TTFT = NoLatency()
			if stat == "mean" {
				l.TTFT.Mean = m
			} else {
				l.TTFT.P95 = p95
			}
			ls = append(ls, l)
		}
		res := Analyze(ls, Meta{}, DefaultOptions())
		if r := res.Rate; r.TTFTBlowupStat != stat || !(r.TTFTBlowupRPS >= 8 && r.TTFTBlowupRPS <= 10) {
			t.Errorf("%s only: blow-up %v on %q, want between 8 and 10 on %s", stat, r.TTFTBlowupRPS, r.TTFTBlowupStat, stat)
		}
	}
}

// TestRateJSON: a closed-loop analysis.json keeps its keys, gains mode "concurrency" and has
// no rate key in a level or at the top; a rate one has mode "rate", the level keys and the
// rate answer.
func TestRateJSON(t *testing.T) {
	closed := Analyze(groundTruth(4, []int{1, 2, 4, 8}, 0, 1), Meta{}, DefaultOptions())
	b, err := json.Marshal(closed)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"mode":"concurrency"`) || strings.Contains(s, "offered_rps") || strings.Contains(s, `"rate"`) ||
		strings.Contains(s, "replicas_at_capacity") {
		t.Errorf("closed-loop analysis.json: %s", s)
	}
	rate := Analyze([]Level{rateLevel(2, 2, 50, true), rateLevel(4, 3, 500, false)}, Meta{}, DefaultOptions())
	b, err = json.Marshal(rate)
	if err != nil {
		t.Fatal(err)
	}
	s = string(b)
	for _, k := range []string{`"mode":"rate"`, `"offered_rps":2`, `"achieved_rps"`, `"sustainable":false`, `"backlog_growth_rps"`,
		`"schedule_lag_ms"`, `"ttft_scheduled_ms"`, `"e2e_scheduled_ms"`, `"capacity_rps"`, `"capacity_interval"`, `"capacity_tps"`,
		`"ttft_blowup_rps"`, `"slo_rps"`, `"slo_goodput_rps"`} {
		if !strings.Contains(s, k) {
			t.Errorf("rate analysis.json lacks %s", k)
		}
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Levels[1].IsRate() || back.Levels[1].Sustainable || back.Levels[1].OfferedRPS != 4 || back.Rate == nil {
		t.Errorf("round trip lost the rate fields: %+v", back.Levels[1].RateLevel)
	}
}

// TestRateGate: an arrival-rate baseline is gated on its rate figures. A run whose capacity
// fell 15% (10 → 8.5 requests/s) regresses on the maximum TPS and the capacity, its SLO point
// unchanged; one that sustained every level it ran (capacity ≥ 8, below the 9 floor) is
// unknown on capacity, a lower bound deciding nothing there.
func TestRateGate(t *testing.T) {
	levels := func(c float64) []Level {
		return []Level{rateLevel(2, 2, 50, true), rateLevel(4, 4, 50, true), rateLevel(8, 8, 60, true),
			rateLevel(12, c, 900, false), rateLevel(16, c, 3000, false)}
	}
	opts := DefaultOptions()
	opts.SLO = SLO{TTFTP95: 300 * time.Millisecond}
	base := Analyze(levels(10), Meta{}, opts)
	slower := Analyze(levels(8.5), Meta{}, opts)
	verdicts := map[string]string{}
	for _, c := range Gate(&base, &slower, 0.1) {
		verdicts[c.Metric] = c.Verdict
	}
	want := map[string]string{"max_tps": GateRegressed, "capacity_rps": GateRegressed, "capacity_tps": GateRegressed,
		"slo_rps": gateOK, "slo_tps": gateOK, "slo_goodput_rps": gateOK, "ttft_blowup_rps": gateOK}
	for m, v := range want {
		if verdicts[m] != v {
			t.Errorf("%s: %q, want %q (all: %v)", m, verdicts[m], v, verdicts)
		}
	}
	beyond := Analyze(levels(10)[:3], Meta{}, opts)
	for _, c := range Gate(&base, &beyond, 0.1) {
		if c.Metric == "capacity_rps" && (c.Verdict != gateUnknown || !c.RunAtLeast) {
			t.Errorf("capacity ≥ 8 against 10 with a 9 floor: %+v, want unknown (a bound below the floor)", c)
		}
	}
}

// TestRateTablePlateau reads the capacity of tables that give no achieved rates, backlog or
// verdicts from the plateau of their output TPS (DESIGN §4.15): a replica of 350 tokens/s
// whose TPS rises 100 tokens/s per request/s, so the plateau's onset is 3.5 requests/s,
// between the rates 3 and 4. A server that shortens its answers past it (output tokens per
// request 100 below the onset, 58 at the last rate) holds the completion rate at the offered
// rate — no deficit to judge by — and the falling tokens are quoted; a table whose TPS never
// stops rising keeps the lower bound at its largest rate.
func TestRateTablePlateau(t *testing.T) {
	rates := []float64{1, 2, 3, 4, 6, 8, 10, 12}
	table := func(tps func(x float64) float64, nOut func(x float64) float64) []Level {
		var ls []Level
		for _, x := range rates {
			l := rateLevel(x, x, 50, true)
			l.AchievedRPS, l.BacklogGrowthRPS, l.QPS, l.GoodputQPS, l.OutputTPSCI95 = NaN(), NaN(), NaN(), NaN(), NaN()
			l.OutputTPS, l.MeanOutputTokens = Float(tps(x)), Float(nOut(x))
			ls = append(ls, l)
		}
		return ls
	}
	plateau := func(x float64) float64 { return math.Min(100*x, 350) }
	cuts := func(x float64) float64 { return math.Min(100, 350/x) }
	res := Analyze(table(plateau, cuts), Meta{}, DefaultOptions())
	r := res.Rate
	if !within(float64(r.CapacityRPS), 3.5, 1e-9) || r.CapacityRule != CapacityRulePlateau || r.CapacityBound != "" ||
		r.CapacityInterval != [2]Float{3, 4} || !within(float64(r.CapacityTPS), 350, 1e-9) {
		t.Errorf("capacity %v (%v tokens/s) rule %q bound %q interval %v, want 3.5 (350) by the plateau, interval [3, 4]",
			r.CapacityRPS, r.CapacityTPS, r.CapacityRule, r.CapacityBound, r.CapacityInterval)
	}
	if !strings.Contains(r.CapacityReason, "fall from 100 below the onset to 29.2 at the largest rate") {
		t.Errorf("reason %q does not quote the output tokens per request falling", r.CapacityReason)
	}
	if res.Levels[3].Sustainable || !res.Levels[2].Sustainable {
		t.Errorf("sustainable at 3: %v, at 4: %v; want true, false (4 is on the plateau)", res.Levels[2].Sustainable, res.Levels[3].Sustainable)
	}
	rising := Analyze(table(func(x float64) float64 { return 100 * x }, func(float64) float64 { return 100 }), Meta{}, DefaultOptions()).Rate
	if rising.CapacityBound != "at_least" || rising.CapacityRPS != 12 || rising.CapacityRule != capacityRuleSplit {
		t.Errorf("TPS rising throughout: capacity %v (%q, %q), want at least 12 by the split", rising.CapacityRPS, rising.CapacityBound, rising.CapacityRule)
	}
}
