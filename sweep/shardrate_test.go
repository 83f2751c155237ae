package sweep_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// runOnShards runs plan as shards processes' worth of sweep.Run, concurrently, each with its
// own client against url, on one Schedule that starts 600 ms from now (hooks, when set, sets
// each shard's clock hooks): room for a loaded machine to start every shard, since one more
// than half a warmup late stops. It returns the schedule and each shard's sink.
func runOnShards(t *testing.T, url string, plan sweep.Plan, shards int, hooks func(*sweep.Schedule)) (sweep.Schedule, []*memSink) {
	t.Helper()
	sched := sweep.Schedule{Start: time.Now().Add(600 * time.Millisecond), Shards: shards}
	sinks := make([]*memSink, shards)
	var wg sync.WaitGroup
	for i := range shards {
		s := sched
		s.Shard = i
		if hooks != nil {
			hooks(&s)
		}
		p := plan
		p.Schedule = &s
		sinks[i] = &memSink{}
		client := newClient(t, url, 64)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := sweep.Run(context.Background(), context.Background(), p, client, sinks[i])
			if err != nil || out.StopReason != sweep.StopDone {
				t.Errorf("shard %d: %v, stop %q", i, err, out.StopReason)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return sched, sinks
}

// replay is the one-process schedule of a rate level (DESIGN §3.9): arrival k at t_k = start +
// Σ_{j≤k} gap_j in Unix ns, the arrivals due before end.
func replay(start int64, gaps func() time.Duration, end int64) []int64 {
	var out []int64
	for at := start + int64(gaps()); at < end; at += int64(gaps()) {
		out = append(out, at)
	}
	return out
}

// checkShardedLevel checks level li of the shards' sinks against want, the one-process
// schedule of its arrivals due before the scheduled W1, every shard's: each shard i of n
// records only arrivals k ≡ i (mod n), each Scheduled at want[k] exactly, in its own slots
// (sweep.Workers of the cap c, or −1 for an arrival due when issuing stopped), with the
// level's LevelRun.Concurrency c and its Shard; together they record every arrival 0 … K−1
// exactly once and none after. It returns every record of the level.
func checkShardedLevel(t *testing.T, sinks []*memSink, li, c int, want []int64) []record.Record {
	t.Helper()
	n := len(sinks)
	seen := make([]int, len(want))
	var all []record.Record
	for i, sink := range sinks {
		run := sink.runs[li]
		first, count := sweep.Workers(c, i, n)
		wantShard := record.ShardPart{Index: i, Count: n, FirstWorker: first, Workers: count}
		if run.Concurrency != c || run.Shard == nil || *run.Shard != wantShard {
			t.Errorf("level %d shard %d: concurrency %d, shard %+v; want %d, %+v", li, i, run.Concurrency, run.Shard, c, wantShard)
		}
		if run.W1 != sinks[0].runs[li].W1 {
			t.Errorf("level %d shard %d: W1 %d, shard 0's %d: one schedule", li, i, run.W1, sinks[0].runs[li].W1)
		}
		for _, r := range sink.records[li] {
			switch {
			case r.Seq%n != i:
				t.Errorf("level %d shard %d sent arrival %d", li, i, r.Seq)
			case r.Seq >= len(want):
				t.Errorf("level %d shard %d: arrival %d is due after W1 (%d arrivals before)", li, i, r.Seq, len(want))
			case r.Scheduled != want[r.Seq]:
				t.Errorf("level %d arrival %d: scheduled %d, the one-process schedule %d (%v off)", li, r.Seq, r.Scheduled, want[r.Seq], time.Duration(r.Scheduled-want[r.Seq]))
			default:
				seen[r.Seq]++
			}
			if r.Worker != -1 && (r.Worker < first || r.Worker >= first+count) {
				t.Errorf("level %d shard %d: arrival %d in slot %d, outside its slots %d … %d", li, i, r.Seq, r.Worker, first, first+count-1)
			}
		}
		all = append(all, sink.records[li]...)
	}
	for k, m := range seen {
		if m != 1 {
			t.Errorf("level %d: arrival %d recorded %d times, want once", li, k, m)
		}
	}
	return all
}

// TestShardedRateSchedule runs a Poisson rate level (100 requests/s, a cap of 16) as two shards
// on one Schedule against the fixed-mode simulator: the shards' records are the one-process
// schedule split by index (checkShardedLevel), shard 0 in slots 0 … 7 and shard 1 in 8 … 15,
// and the arrivals before W1 number about rate × (warmup + window) = 110.
func TestShardedRateSchedule(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := sweep.Protocol{Warmup: 600 * time.Millisecond, Duration: 500 * time.Millisecond, MinRequests: 1,
		CITarget: 1, DrainTimeout: 300 * time.Millisecond}
	const rate, c = 100, 16
	arrival := sweep.Arrival{Seed: 11}
	plan := sweep.Plan{Rates: []float64{rate}, Arrival: arrival, MaxConcurrency: c, Protocol: proto, Workload: fixedWorkload{out: 2}}
	sched, sinks := runOnShards(t, url, plan, 2, nil)
	w1 := sinks[0].runs[0].W1
	if want := sched.LevelStart(proto, 0).Add(proto.Warmup + proto.Duration).UnixNano(); w1 != want {
		t.Errorf("W1 %d, want the scheduled %d", w1, want)
	}
	want := replay(sched.LevelStart(proto, 0).UnixNano(), arrival.Gaps(rate, 0), w1)
	checkShardedLevel(t, sinks, 0, c, want)
	if len(want) < 70 || len(want) > 150 {
		t.Errorf("%d arrivals before W1, want about 110", len(want))
	}
}

// TestShardedTraceSchedule replays a trace (traceSample: 30 requests over a 1.5 s pass) at time
// scale 4 as two shards on one Schedule: the records are the one-process replay split by
// index, each arrival k the trace's request k mod 30 (its recorded input length asked), and
// the window one whole pass, 1.5 s ÷ 4 (traceLevelProtocol: duration 400 ms holds one).
func TestShardedTraceSchedule(t *testing.T) {
	t.Parallel()
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	tr, w := sampleTrace(t, record.APIChat)
	proto := sweep.Protocol{Warmup: 600 * time.Millisecond, Duration: 400 * time.Millisecond, MaxDuration: 400 * time.Millisecond,
		MinRequests: 1, CITarget: 1, DrainTimeout: 300 * time.Millisecond}
	const c = 8
	plan := sweep.Plan{Rates: []float64{tr.Rate(4)}, Trace: tr, MaxConcurrency: c, Protocol: proto, Workload: w}
	sched, sinks := runOnShards(t, url, plan, 2, nil)
	run := sinks[0].runs[0]
	w0 := sched.LevelStart(proto, 0).Add(proto.Warmup).UnixNano()
	if pass := tr.Pass() / 4; run.TimeScale != 4 || run.W0 != w0 || run.W1-run.W0 != int64(pass) {
		t.Errorf("time scale %v, window [%d, %d): want 4 and one pass of %v from the scheduled W0 %d", run.TimeScale, run.W0, run.W1, pass, w0)
	}
	want := replay(sched.LevelStart(proto, 0).UnixNano(), tr.Gaps(4), run.W1)
	for _, r := range checkShardedLevel(t, sinks, 0, c, want) {
		if in := int(tr.Entry(r.Seq % tr.Len()).InputTokens); r.OK() && r.RequestedPromptTokens != in {
			t.Errorf("arrival %d asked %d prompt tokens, the trace's request %d has %d", r.Seq, r.RequestedPromptTokens, r.Seq%tr.Len(), in)
		}
	}
	if len(want) < 30 {
		t.Errorf("%d arrivals before W1, want a pass and more (30 + warmup's)", len(want))
	}
}

// TestShardClockOffset runs a rate level on a shard whose clock reads 50 ms ahead
// (Schedule.Skew) and whose Clock reads an offset of 20 ms (the reference then reads 30 ms
// ahead of the machine). The reading is asked to end 100 ms before the level's start on the
// machine — LevelStart − Skew — and recorded in the level; the level runs at LevelStart +
// 20 ms on the shard's clock (LevelStart − 30 ms on the machine's): its phase boundaries and
// every record's Scheduled are exactly the schedule's + 20 ms, and the records' lag behind
// schedule (Sent − Scheduled) is never negative and at its least small: the machine sent on
// time (a start moved by Skew − offset instead of offset − Skew would send 60 ms off; a Sent
// not shifted with its Scheduled, 50 ms). A reading with an Error: TestShardPlanOffset.
func TestShardClockOffset(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := sweep.Protocol{Warmup: 400 * time.Millisecond, Duration: 200 * time.Millisecond, MinRequests: 1,
		CITarget: 1, DrainTimeout: 100 * time.Millisecond}
	const rate, c = 100, 64 // no arrival waits for a slot: its lag is the machine's alone
	const skew, offset = 50 * time.Millisecond, 20 * time.Millisecond
	arrival := sweep.Arrival{Seed: 4}
	var deadline time.Time
	reading := record.ClockOffset{Server: "ref:1", Offset: int64(offset), RTT: 200e3}
	plan := sweep.Plan{Rates: []float64{rate}, Arrival: arrival, MaxConcurrency: c, Protocol: proto, Workload: fixedWorkload{out: 2}}
	sched, sinks := runOnShards(t, url, plan, 1, func(s *sweep.Schedule) {
		s.Skew = skew
		s.Clock = func(ctx context.Context) record.ClockOffset {
			deadline, _ = ctx.Deadline()
			return reading
		}
	})
	run := sinks[0].runs[0]
	if want := sched.LevelStart(proto, 0).Add(-skew - 100*time.Millisecond); !deadline.Equal(want) {
		t.Errorf("reading due by %v, want %v", deadline, want)
	}
	if run.Clock == nil || *run.Clock != reading {
		t.Errorf("clock %+v, want %+v", run.Clock, reading)
	}
	start := sched.LevelStart(proto, 0).Add(offset).UnixNano()
	if run.W0 != start+int64(proto.Warmup) || run.W1 != run.W0+int64(proto.Duration) {
		t.Errorf("window [%d, %d), want [%d, %d)", run.W0, run.W1, start+int64(proto.Warmup), start+int64(proto.Warmup+proto.Duration))
	}
	recs := checkShardedLevel(t, sinks, 0, c, replay(start, arrival.Gaps(rate, 0), run.W1))
	var lags []time.Duration
	for _, r := range recs {
		if r.Worker >= 0 {
			lags = append(lags, time.Duration(r.Sent-r.Scheduled))
		}
	}
	// Sent and Scheduled are on one clock: none was sent before its time, and the first on
	// time was (a wrong start or an unshifted Sent would be 50–60 ms off either way; a loaded
	// machine delays some arrivals, not all).
	slices.Sort(lags)
	if len(lags) == 0 || lags[0] < -time.Millisecond || lags[0] > 25*time.Millisecond {
		t.Errorf("%d sent, lags %v: want none below −1 ms and the least under 25 ms", len(lags), lags)
	}
}

// TestShardClockClosedLoop: a closed-loop shard runs on the same clock path — a shard whose
// clock reads 30 ms ahead and whose reading gives an offset of 10 ms runs its level at the
// scheduled start − 20 ms on the machine: the level's W0 is the schedule's + 10 ms exactly,
// (a start moved by Skew − offset instead would make it the schedule's + 50 ms), and every
// record was sent between the level's start and the end of its drain as handed over.
func TestShardClockClosedLoop(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := sweep.Protocol{Warmup: 600 * time.Millisecond, Duration: 200 * time.Millisecond, MinRequests: 1,
		CITarget: 1, DrainTimeout: 200 * time.Millisecond}
	const skew, offset = 30 * time.Millisecond, 10 * time.Millisecond
	plan := sweep.Plan{Levels: []int{4}, Protocol: proto, Workload: fixedWorkload{out: 2}}
	sched, sinks := runOnShards(t, url, plan, 2, func(s *sweep.Schedule) {
		s.Skew = skew
		s.Clock = func(context.Context) record.ClockOffset { return record.ClockOffset{Offset: int64(offset)} }
	})
	w0 := sched.LevelStart(proto, 0).Add(offset + proto.Warmup).UnixNano()
	for i, sink := range sinks {
		run := sink.runs[0]
		if run.W0 != w0 || run.Clock == nil || run.Clock.Offset != int64(offset) {
			t.Errorf("shard %d: W0 %d, clock %+v: want %d, offset %v", i, run.W0, run.Clock, w0, offset)
		}
		for _, r := range sink.records[0] {
			if r.Sent < run.WarmupStart || r.Sent > run.DrainEnd {
				t.Errorf("shard %d: a request sent at %d, outside the level [%d, %d]", i, r.Sent, run.WarmupStart, run.DrainEnd)
			}
		}
		if len(sink.records[0]) == 0 {
			t.Errorf("shard %d sent nothing", i)
		}
	}
}

// TestDescribeRateShard: a rate shard's schedule line says which arrivals it sends and its part
// of the cap; a closed-loop shard's does not; neither says which clock it runs on (ClockPlan
// does, with the clock server or without one).
func TestDescribeRateShard(t *testing.T) {
	t.Parallel()
	s := sweep.Schedule{Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), Shard: 1, Shards: 3,
		Clock: func(context.Context) record.ClockOffset { return record.ClockOffset{} }}
	proto := shortProtocol()
	proto.Mode, proto.MaxConcurrency = record.ModeRate, 64
	got := s.Describe(proto, 2, "1/3")
	if want := "this shard sends arrivals 1, 4, 7, … of it, at most 21 in flight (max_concurrency 64 ÷ 3)"; !strings.Contains(got, want) || strings.Contains(got, "clock") {
		t.Errorf("%s\nwant %q, and no clock", got, want)
	}
	if got := s.Describe(shortProtocol(), 2, "1/3"); strings.Contains(got, "arrivals") || strings.Contains(got, "clock") {
		t.Errorf("closed loop: %s", got)
	}
	for server, want := range map[string]string{
		"h:7070": "Before each level it reads its clock against the clock server h:7070 (from at most 5s before the level, stopping 100ms before it) and runs the level at its agreed start + the offset read",
		"":       "It trusts this machine's clock (NTP; no --clock-server): each level runs at its agreed start on it.",
	} {
		if got := sweep.ClockPlan(server); !strings.HasPrefix(got, want) {
			t.Errorf("ClockPlan(%q) = %q, want %q", server, got, want)
		}
	}
}
