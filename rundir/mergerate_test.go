package rundir_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// rateGen describes a sharded rate (or trace) sweep whose shards' results are built, without
// running it, by the rules of one global schedule (DESIGN §8): shard i of n records arrivals
// k ≡ i (mod n), Seq k, in its slots of the cap, Scheduled = the level's start + Σ gaps +
// its clock offset, sent a fixed lag later and answered after e2e.
type rateGen struct {
	shards int
	rates  []float64 // one level each (a trace level: the trace's rate at scale)
	e2e    time.Duration
	// offset is shard i's clock − the reference clock at level k: its records' times are
	// that much later. reading is what it recorded of it (nil: a measured reading of offset
	// against shard 0's clock server, ±100 µs).
	offset  func(shard, level int) int64
	reading func(shard, level int, offset int64) *record.ClockOffset
	// trace, when set, makes it a trace replay at time scale scale.
	trace *workload.Trace
	scale float64
	// wait is arrival seq's wait for a slot (Record.SlotWait; nil: none waited); the last
	// unsent arrivals of each level were due when issuing stopped, every slot taken, and were
	// never sent: recorded cancelled, Worker −1, at the end of the load.
	wait   func(seq int) time.Duration
	unsent int
}

// rateProtocol: a rate sweep with a 500 ms warmup, a window of 1 s to 2 s (100 ms slices)
// and a 400 ms drain, at most 16 in flight.
func rateProtocol() sweep.Protocol {
	return sweep.Protocol{
		Mode: record.ModeRate, Arrival: sweep.ArrivalPoisson, ArrivalSeed: 7, MaxConcurrency: 16,
		Warmup: 500 * time.Millisecond, Duration: time.Second, MaxDuration: 2 * time.Second,
		MinRequests: 10, CITarget: 0.05, DrainTimeout: 400 * time.Millisecond,
	}
}

var genStart = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

// shardLag is shard i's schedule lag in rateGen's records.
func shardLag(i int) time.Duration { return time.Duration(1+2*i) * 100 * time.Microsecond }

// window is how long a level loads the server after warmup: the rate protocol's longest
// window, or a trace level's whole passes, the fewest that reach duration (at most
// max_duration), as a trace shard measures them (sweep's traceLevelProtocol).
func (g rateGen) window(proto sweep.Protocol) time.Duration {
	if g.trace == nil {
		return proto.MaxDuration
	}
	pass := time.Duration(math.Round(float64(g.trace.Pass()) / g.scale))
	k := max(1, (proto.Duration+pass-1)/pass)
	if k*pass > proto.MaxDuration {
		k = max(1, proto.MaxDuration/pass)
	}
	return k * pass
}

// schedule returns level k's scheduled arrival times on the reference clock, those due
// before the end of the load.
func (g rateGen) schedule(proto sweep.Protocol, k int) []int64 {
	sched := sweep.Schedule{Start: genStart}
	start := sched.LevelStart(proto, k).UnixNano()
	end := start + int64(proto.Warmup+g.window(proto))
	gaps := proto.ArrivalOf(1).Gaps(g.rates[k], k)
	if g.trace != nil {
		gaps = g.trace.Gaps(g.scale)
	}
	var out []int64
	for t := start + int64(gaps()); t < end; t += int64(gaps()) {
		out = append(out, t)
	}
	return out
}

// parts builds the shards' results.
func (g rateGen) parts(t *testing.T) []*rundir.Run {
	t.Helper()
	proto := rateProtocol()
	sched := sweep.Schedule{Start: genStart}
	c := proto.MaxConcurrency
	parts := make([]*rundir.Run, g.shards)
	for i := range g.shards {
		cfg := config.Default()
		cfg.Target.URL, cfg.Target.Model = "http://gpu:8000/v1", "m"
		cfg.Sweep = proto
		cfg.Workload.Seed = 1
		cfg.Shard = config.ShardConfig{Index: i, Count: g.shards, StartAt: genStart.Format(time.RFC3339)}
		res := &rundir.Run{Dir: fmt.Sprintf("runs/s%d", i), Config: cfg, Start: genStart, StopReason: sweep.StopBudget}
		if g.trace != nil {
			res.Config.Workload.Trace = workload.TraceConfig{File: g.trace.Info.Path}
			res.Config.Sweep.TimeScales = []float64{g.scale}
			res.Trace = &g.trace.Info
		}
		parts[i] = res
	}
	for k, rate := range g.rates {
		start := sched.LevelStart(proto, k).UnixNano()
		w0 := start + int64(proto.Warmup)
		w1 := w0 + int64(g.window(proto))
		for i, res := range parts {
			off := int64(0)
			if g.offset != nil {
				off = g.offset(i, k)
			}
			reading := &record.ClockOffset{Server: "shard0:7070", Reference: i == 0, Offset: off, RTT: 200_000, Uncertainty: 100_000, Exchanges: 8}
			if g.reading != nil {
				reading = g.reading(i, k, off)
			}
			first, n := sweep.Workers(c, i, g.shards)
			run := record.LevelRun{Index: k, Concurrency: c, OfferedRPS: rate, WarmupStart: start + off, W0: w0 + off, W1: w1 + off,
				DrainEnd: w1 + int64(proto.DrainTimeout) + off, TokensPerChunkBound: 1, Clock: reading,
				Shard: &record.ShardPart{Index: i, Count: g.shards, FirstWorker: first, Workers: n}}
			if g.trace != nil {
				run.TimeScale = g.scale
			}
			res.Levels = append(res.Levels, record.Level{Run: run})
		}
		sched := g.schedule(proto, k)
		for seq, at := range sched {
			i := seq % g.shards
			first, n := sweep.Workers(c, i, g.shards)
			off := parts[i].Levels[k].Run.W0 - w0
			chunks := make([]int64, 20)
			for j := range chunks {
				chunks[j] = int64(50*time.Millisecond/time.Microsecond) + int64(j)*int64(g.e2e-50*time.Millisecond)/19/1000
			}
			l := &parts[i].Levels[k]
			if seq >= len(sched)-g.unsent {
				l.Records = append(l.Records, record.Record{Level: k, Concurrency: c, Worker: -1, Seq: seq, Scheduled: at + off,
					Sent: w1 + off, Status: record.StatusCancelled, ErrorClass: record.ErrCancelled, Error: "issuing stopped before a slot was free"})
				continue
			}
			var wait time.Duration
			if g.wait != nil {
				wait = g.wait(seq)
			}
			l.Records = append(l.Records, record.Record{SlotWait: wait,
				Level: k, Concurrency: c, Worker: first + seq/g.shards%n, Seq: seq,
				Scheduled: at + off, Sent: at + off + int64(shardLag(i)),
				TTFT: 50 * time.Millisecond, E2E: g.e2e, Chunks: chunks, OutputTokens: 20, Status: record.StatusOK,
			})
		}
	}
	return parts
}

// TestMergeRateShards merges two shards of a rate sweep, shard 1's clock 50 ms ahead (its
// reading says so): the merged records are on the reference clock, exactly the replayed
// schedule, every arrival once; the send times fit the Poisson process; each shard's lag and
// offset are reported; the window starts at the scheduled end of warmup (a request had
// completed) and ends, in whole slices, where its realised rate is within 5% of the offered;
// and the console's clock line names the offset applied.
func TestMergeRateShards(t *testing.T) {
	t.Parallel()
	g := rateGen{shards: 2, rates: []float64{20, 50}, e2e: 240 * time.Millisecond,
		offset: func(shard, _ int) int64 { return int64(shard) * int64(50*time.Millisecond) }}
	parts := g.parts(t)
	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v, warnings %q", err, warnings)
	}
	if want := `clock offsets +0.000 … +50.000 ms applied, largest uncertainty ±0.100 ms`; merged.Clocks != want {
		t.Errorf("clock line %q, want %q", merged.Clocks, want)
	}
	proto := rateProtocol()
	for k, l := range merged.Levels {
		run := l.Run
		sched := g.schedule(proto, k)
		if len(l.Records) != len(sched) {
			t.Fatalf("level %d: %d records, want the schedule's %d arrivals", k, len(l.Records), len(sched))
		}
		first := int64(math.MaxInt64)
		for _, r := range l.Records {
			if r.Scheduled != sched[r.Seq] || time.Duration(r.Sent-r.Scheduled) != shardLag(r.Seq%2) {
				t.Fatalf("level %d arrival %d: scheduled %d, sent %v later; want %d and %v (shard %d's offset removed)",
					k, r.Seq, r.Scheduled, time.Duration(r.Sent-r.Scheduled), sched[r.Seq], shardLag(r.Seq%2), r.Seq%2)
			}
			first = min(first, r.Done())
		}
		if run.OfferedRPS != g.rates[k] || run.Shard != nil || run.Clock != nil {
			t.Errorf("level %d: offered %v, shard %+v, clock %+v", k, run.OfferedRPS, run.Shard, run.Clock)
		}
		fit := run.Arrivals
		if fit == nil || fit.Process != "poisson" || fit.Count != len(sched)-1 || fit.ExpectedCV != 1 || fit.KSP == nil || *fit.KSP < 0.01 {
			t.Errorf("level %d: arrivals %+v, want %d Poisson gaps that fit", k, fit, len(sched)-1)
		}
		if len(run.Shards) != 2 {
			t.Fatalf("level %d: shards %+v", k, run.Shards)
		}
		for i, s := range run.Shards {
			want := record.ShardLag{Index: i, Requests: (len(sched) + 1 - i) / 2, LagP50: shardLag(i), LagP99: shardLag(i),
				ClockOffset: int64(i) * int64(50*time.Millisecond), ClockUncertainty: 100_000}
			if s != want {
				t.Errorf("level %d shard %d: %+v, want %+v", k, i, s, want)
			}
		}
		w0 := sweep.Schedule{Start: genStart}
		w0at := w0.LevelStart(proto, k).Add(proto.Warmup).UnixNano()
		if first > w0at || run.W0 != w0at {
			t.Errorf("level %d: window starts %v after the scheduled end of warmup (first completion %v before it), want 0",
				k, time.Duration(run.W0-w0at), time.Duration(w0at-first))
		}
		// The one-process window: the first candidate of whole slices, below the horizon, with
		// min_requests completions, steady by the rate test, that realises the offered rate. At
		// these rates and seeds the gate matters: without it the window would end sooner.
		want, ungated := oneProcessWindow(run, l.Records, sched, proto, true), oneProcessWindow(run, l.Records, sched, proto, false)
		if run.W1 != want || want == ungated {
			t.Errorf("level %d: window [W0, +%v), want +%v (not +%v: the window must realise the rate)",
				k, time.Duration(run.W1-run.W0), time.Duration(want-run.W0), time.Duration(ungated-run.W0))
		}
	}
}

// TestMergeRateNotes: a merged rate level says, as one process would, that max_concurrency
// held arrivals back — every arrival that waited for a slot on either shard, the longest wait,
// out of all the level's arrivals — and how many arrivals were never sent (Worker −1, recorded
// cancelled: they waited from their time to the end of the load), and those are not counted
// as a shard's sent requests.
func TestMergeRateNotes(t *testing.T) {
	t.Parallel()
	wait := func(seq int) time.Duration {
		if seq%3 == 0 {
			return time.Duration(seq%7+1) * time.Millisecond
		}
		return 0
	}
	g := rateGen{shards: 2, rates: []float64{20}, e2e: 240 * time.Millisecond, wait: wait, unsent: 2}
	merged, warnings, err := rundir.Merge(context.Background(), g.parts(t))
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v, warnings %q", err, warnings)
	}
	proto := rateProtocol()
	sched := g.schedule(proto, 0)
	loadEnd := sweep.Schedule{Start: genStart}
	end := loadEnd.LevelStart(proto, 0).Add(proto.Warmup + proto.MaxDuration).UnixNano()
	waited, longest, sent := 0, time.Duration(0), [2]int{}
	for seq, at := range sched {
		switch {
		case seq >= len(sched)-g.unsent:
			waited++
			longest = max(longest, time.Duration(end-at))
		case wait(seq) > 0:
			waited++
			longest = max(longest, wait(seq))
			fallthrough
		default:
			sent[seq%2]++
		}
	}
	run := merged.Levels[0].Run
	for _, want := range []string{
		fmt.Sprintf("max_concurrency 16 reached: %d of %d arrivals waited client-side (longest %s)", waited, len(sched), longest.Round(time.Microsecond)),
		"2 arrivals due when issuing stopped were never sent: recorded cancelled",
	} {
		if !slices.Contains(run.Notes, want) {
			t.Errorf("notes %q, want %q", run.Notes, want)
		}
	}
	if len(run.Shards) != 2 || run.Shards[0].Requests != sent[0] || run.Shards[1].Requests != sent[1] {
		t.Errorf("shards %+v, want %v sent", run.Shards, sent)
	}
}

// oneProcessWindow is the end of the window one process chooses for a rate level whose
// window starts at run.W0 and loads the server until run.W0 + max_duration, computed from the
// public steady-state test (DESIGN §3.2, §3.9): the first window of k ≥ MinSlices slices
// ending before the oldest request in flight at the longest window's end, with min_requests
// completions, no material trend (record.SteadyDetails, the CI not judged) and, when gate,
// its arrivals (sched) realising the offered rate (record.RealizedWithin); else the longest.
func oneProcessWindow(run record.LevelRun, recs []record.Record, sched []int64, proto sweep.Protocol, gate bool) int64 {
	slice := int64(proto.Duration / record.MinSlices)
	w0, wmax := run.W0, run.W0+int64(proto.MaxDuration)
	horizon := wmax
	for _, r := range recs {
		if r.Sent < wmax && r.Done() > wmax {
			horizon = min(horizon, r.Sent)
		}
	}
	for k := int64(record.MinSlices); w0+k*slice <= min(horizon, wmax); k++ {
		w1 := w0 + k*slice
		arrived, done := 0, 0
		for _, at := range sched {
			if at >= w0 && at < w1 {
				arrived++
			}
		}
		for i := range recs {
			if record.CompletedInWindow(&recs[i], w0, w1) {
				done++
			}
		}
		s := record.WindowSeconds(w0, w1)
		if done < proto.MinRequests || gate && !record.RealizedWithin(float64(arrived)/s, run.OfferedRPS, s) {
			continue
		}
		if record.SteadyDetails(record.SliceTPS(recs, w0, w1, int(k))).SteadyAt(proto.CITarget, proto.CITarget, true) {
			return w1
		}
	}
	return wmax
}

// TestMergeRateClocks: the merge warns of a clock reading uncertain by more than 1 ms, of a
// shard whose offsets drift by more than 1 ms over the sweep and of a reading that failed,
// naming the shard, level and server; without a clock server it says it trusts the shards'
// clocks and what each kernel said. A shard whose records are off the schedule by its
// clock's skew, its reading not saying so, is refused, as are shards that offered different
// rates at one level.
func TestMergeRateClocks(t *testing.T) {
	t.Parallel()
	const ms = int64(time.Millisecond)
	skew := func(shard, level int) int64 { return int64(shard) * 50 * ms }
	measured := func(unc int64, errText string) func(shard, level int, off int64) *record.ClockOffset {
		return func(shard, level int, off int64) *record.ClockOffset {
			c := &record.ClockOffset{Server: "shard0:7070", Reference: shard == 0, Offset: off, RTT: 200_000, Uncertainty: 100_000, Exchanges: 8}
			if shard == 1 && level == 1 {
				c.Uncertainty, c.Error = unc, errText
			}
			return c
		}
	}
	ntp := func(shard, level int, off int64) *record.ClockOffset {
		states := []*record.NTPState{{Synced: true, EstError: 500_000}, {Synced: false}}
		return &record.ClockOffset{Offset: 0, NTP: states[shard]}
	}
	for _, tc := range []struct {
		name    string
		gen     rateGen
		edit    func(parts []*rundir.Run)
		warning string // the start of the only warning, or the error when refused
		refused bool
	}{
		{name: "uncertain", gen: rateGen{offset: skew, reading: measured(1_400_000, "")},
			warning: `shard 1/2, level 2: clock offset +50.000 ms against "shard0:7070" is uncertain by ±1.400 ms, more than 1.000 ms`},
		{name: "failed", gen: rateGen{offset: skew, reading: measured(0, "read udp: i/o timeout")},
			warning: `shard 1/2, level 2: clock reading against "shard0:7070" failed ("read udp: i/o timeout"): the level ran on the previous offset, +50.000 ms`},
		{name: "drift", gen: rateGen{offset: func(shard, level int) int64 { return int64(shard) * (50*ms + int64(level)*3*ms/2) }},
			warning: `shard 1/2: its clock offset against "shard0:7070" drifted 1.500 ms over the sweep (+50.000 ms at level 1, +51.500 ms at level 2), more than 1.000 ms`},
		{name: "no clock server", gen: rateGen{reading: ntp},
			warning: "no shard measured its clock against a clock server (--clock-server): the merge trusts the shards' clocks to agree (NTP); the kernels said: shard 0/2 synchronised, estimated error 0.500 ms, shard 1/2 unsynchronised"},
		{name: "skew not measured", gen: rateGen{offset: skew, reading: ntp}, refused: true,
			warning: "merge: level 1 (20 requests/s): shard 1/2's window [1796551200550000000, 1796551202550000000) differs from shard 0/2's [1796551200500000000, 1796551202500000000): not one schedule"},
		{name: "rates differ", edit: func(p []*rundir.Run) { p[1].Levels[1].Run.OfferedRPS = 60 }, refused: true,
			warning: "merge: level 2 (50 requests/s): shard 1/2 has level 2 (60 requests/s) here: not one schedule"},
	} {
		g := tc.gen
		g.shards, g.rates, g.e2e = 2, []float64{20, 50}, 240*time.Millisecond
		parts := g.parts(t)
		if tc.edit != nil {
			tc.edit(parts)
		}
		merged, warnings, err := rundir.Merge(context.Background(), parts)
		switch {
		case tc.refused && (err == nil || !strings.Contains(err.Error(), tc.warning)):
			t.Errorf("%s: merged (%v), want refused with %q", tc.name, err, tc.warning)
		case tc.refused:
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.warning):
			t.Errorf("%s: warnings %q, want one starting %q", tc.name, warnings, tc.warning)
		case len(merged.Levels) != 2:
			t.Errorf("%s: %d levels merged", tc.name, len(merged.Levels))
		}
	}
}

// TestMergeRateWarmup: a rate level whose first request completes after the scheduled end of
// warmup (900 ms answers, a 500 ms warmup) starts its window at the first slice boundary after
// that completion, as one process ends its warmup at the first completion — not each worker's
// — or at warmup_max.
func TestMergeRateWarmup(t *testing.T) {
	t.Parallel()
	g := rateGen{shards: 2, rates: []float64{20}, e2e: 900 * time.Millisecond}
	merged, warnings, err := rundir.Merge(context.Background(), g.parts(t))
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v, warnings %q", err, warnings)
	}
	proto := rateProtocol()
	slice := int64(proto.Duration / record.MinSlices)
	sched := sweep.Schedule{Start: genStart}
	w0 := sched.LevelStart(proto, 0).Add(proto.Warmup).UnixNano()
	first := g.schedule(proto, 0)[0] + int64(shardLag(0)+g.e2e) // arrival 0, shard 0's
	want := w0 + (first-w0+slice-1)/slice*slice
	if run := merged.Levels[0].Run; run.W0 != want || !hasNote(run, "no request had completed by then") {
		t.Errorf("window starts %v after the scheduled end of warmup, want %v (first completion +%v); notes %q",
			time.Duration(run.W0-w0), time.Duration(want-w0), time.Duration(first-w0), run.Notes)
	}
	// With warmup_max 700 ms one process would have ended its warmup then: 200 ms after
	// the scheduled end of warmup (two slices), with the controller's note.
	parts := g.parts(t)
	for _, p := range parts {
		p.Config.Sweep.WarmupMax = 700 * time.Millisecond
	}
	if merged, _, err = rundir.Merge(context.Background(), parts); err != nil {
		t.Fatal(err)
	}
	if run := merged.Levels[0].Run; run.W0 != w0+2*slice || !hasNote(run, "warmup capped at warmup_max (700ms): no request had completed") {
		t.Errorf("warmup_max: window starts %v after the scheduled end of warmup, want 200ms; notes %q", time.Duration(run.W0-w0), run.Notes)
	}
}

// writeTrace writes a Mooncake trace of n requests 40 ms apart (25 requests/s) and reads it.
func writeTrace(t *testing.T, n int) *workload.Trace {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 64, "output_length": 20, "hash_ids": []}`+"\n", 40*i+i%3*7)
	}
	f := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := workload.LoadTrace(workload.TraceConfig{File: f})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestMergeTraceShards merges two shards of a trace replay at time scale 2, shard 1's clock
// 20 ms ahead: the requests are the trace's schedule once each, no distribution is fitted
// (the gaps are the trace's), each shard's part is reported and the window stays the shards'
// (whole passes). A record off the trace's schedule by a nanosecond is refused; a trace that
// can no longer be read leaves the scheduled times unchecked, with a warning.
func TestMergeTraceShards(t *testing.T) {
	t.Parallel()
	tr := writeTrace(t, 30)
	g := rateGen{shards: 2, rates: []float64{tr.Rate(2)}, e2e: 240 * time.Millisecond, trace: tr, scale: 2,
		offset: func(shard, _ int) int64 { return int64(shard) * int64(20*time.Millisecond) }}
	parts := g.parts(t)
	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v, warnings %q", err, warnings)
	}
	run := merged.Levels[0].Run
	sched := g.schedule(rateProtocol(), 0)
	if n := len(merged.Levels[0].Records); n != len(sched) || run.TimeScale != 2 || run.Arrivals != nil || len(run.Shards) != 2 ||
		run.Shards[0].Requests+run.Shards[1].Requests != n || run.W0 != parts[0].Levels[0].Run.W0 || run.W1 != parts[0].Levels[0].Run.W1 {
		t.Errorf("merged %d records of %d, scale %v, arrivals %+v, shards %+v, window [%d, %d) (shards' [%d, %d))", n, len(sched),
			run.TimeScale, run.Arrivals, run.Shards, run.W0, run.W1, parts[0].Levels[0].Run.W0, parts[0].Levels[0].Run.W1)
	}
	// Answers slower than the warmup: one process would have started the passes at the first
	// completion; the shards' passes stay, whole, with a note.
	slow := g
	slow.e2e = 900 * time.Millisecond
	slowParts := slow.parts(t)
	merged, warnings, err = rundir.Merge(context.Background(), slowParts)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("slow: merge: %v, warnings %q", err, warnings)
	}
	if run, p := merged.Levels[0].Run, slowParts[0].Levels[0].Run; run.W0 != p.W0 || run.W1 != p.W1 || !run.Steady ||
		!hasNote(run, "preceded the first completion") {
		t.Errorf("slow: window [%d, %d), shards' [%d, %d), steady %v, notes %q", run.W0, run.W1, p.W0, p.W1, run.Steady, run.Notes)
	}
	// A level only one shard finished is left out, named by its time scale.
	more := g
	more.rates = append(slices.Clone(g.rates), g.rates[0])
	moreParts := more.parts(t)
	moreParts[1].Levels = moreParts[1].Levels[:1]
	if _, warnings, err := rundir.Merge(context.Background(), moreParts); err != nil || len(warnings) != 1 ||
		!strings.HasPrefix(warnings[0], "level 2 (time scale 2) left out: shard 0/2 finished it") {
		t.Errorf("partial: %v, warnings %q", err, warnings)
	}
	parts[1].Levels[0].Records[3].Scheduled++
	if _, _, err := rundir.Merge(context.Background(), parts); err == nil || !strings.Contains(err.Error(), "level 1 (time scale 2): shard 1/2's arrival 7 is scheduled at") {
		t.Errorf("a record off the trace's schedule merged: %v", err)
	}
	if err := os.Remove(tr.Info.Path); err != nil {
		t.Fatal(err)
	}
	_, warnings, err = rundir.Merge(context.Background(), parts)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "the trace levels' scheduled times are not checked (only their arrival indices)") {
		t.Errorf("trace gone: %v, warnings %q", err, warnings)
	}
}

// TestMergeShiftsClosedLoop: a closed-loop shard's times are moved onto the reference clock
// too: shard 1, its clock 30 ms ahead and measured so, merges with shard 0 (the windows agree
// once shifted), its records come back 30 ms earlier, and the level's shards and the clock
// line state the offset applied.
func TestMergeShiftsClosedLoop(t *testing.T) {
	t.Parallel()
	const off = int64(30 * time.Millisecond)
	parts := shardParts(2, []int{4})
	want := parts[1].Levels[0].Records[0].Sent
	l := &parts[1].Levels[0]
	l.Run.Shift(off)
	l.Run.Clock = &record.ClockOffset{Server: "shard0:7070", Offset: off, Uncertainty: 50_000}
	for i := range l.Records {
		l.Records[i].Shift(off)
	}
	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v, warnings %q", err, warnings)
	}
	if want := "clock offsets +0.000 … +30.000 ms applied, largest uncertainty ±0.050 ms"; merged.Clocks != want {
		t.Errorf("clock line %q, want %q", merged.Clocks, want)
	}
	if s := merged.Levels[0].Run.Shards; len(s) != 2 || s[1].ClockOffset != off || s[0].Requests+s[1].Requests != len(merged.Levels[0].Records) {
		t.Errorf("shards %+v, want shard 1's offset 30 ms and every request", s)
	}
	for _, r := range merged.Levels[0].Records {
		if r.Worker >= 2 && r.Sent != want {
			t.Errorf("shard 1's worker %d sent at %+v of the reference clock, want %d", r.Worker, time.Duration(r.Sent-want), want)
		}
	}
}

// TestMergeServerWindowOffset: the server metrics of a merged level whose window is not the
// shard's are re-read over the merged window on the shard's own clock, the reference window
// + its offset. Shard 1 (50 ms ahead) scraped every 10 ms; its samples read 1 running inside
// that window and 100 outside, so a window shifted the wrong way (2 × 50 ms off) would
// include 100s.
func TestMergeServerWindowOffset(t *testing.T) {
	t.Parallel()
	const off = int64(50 * time.Millisecond)
	g := rateGen{shards: 2, rates: []float64{20}, e2e: 240 * time.Millisecond,
		offset: func(shard, _ int) int64 { return int64(shard) * off }}
	parts := g.parts(t)
	plain, _, err := rundir.Merge(context.Background(), parts)
	if err != nil {
		t.Fatal(err)
	}
	w0, w1 := plain.Levels[0].Run.W0, plain.Levels[0].Run.W1
	if shard := parts[1].Levels[0].Run; w1+off == shard.W1 {
		t.Fatalf("merged window [%d, %d) is shard 1's: nothing to re-read", w0, w1)
	}
	var b strings.Builder
	in := 0
	for at := parts[1].Levels[0].Run.WarmupStart; at < parts[1].Levels[0].Run.DrainEnd; at += int64(10 * time.Millisecond) {
		running := 100
		if at >= w0+off && at < w1+off {
			running = 1
			in++
		}
		fmt.Fprintf(&b, "{\"t_unix_ns\": %d, \"running\": %d}\n", at, running)
	}
	parts[1].Dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(parts[1].Dir, rundir.ServerMetricsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	parts[1].Levels[0].Run.Server = &record.ServerStats{Samples: 1, MaxRunning: 100}
	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v, warnings %q", err, warnings)
	}
	if st := merged.Levels[0].Run.Server; st == nil || st.Samples != in || st.MaxRunning != 1 {
		t.Errorf("server %+v, want the %d samples in the merged window, 1 running", st, in)
	}
}
