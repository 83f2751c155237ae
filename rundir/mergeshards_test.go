package rundir_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/internal/clocksync"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// TestMergeRealRateShards runs a Poisson rate level (100 requests/s, a cap of 16) as two
// shards of one Schedule against the simulator, shard 0 serving its clock on loopback and
// both reading it before the level (clocksync), shard 1 playing a machine whose clock reads
// 50 ms ahead (Schedule.Skew), and merges them: shard 1's offset is measured within 1 ms of
// the skew and applied, so that the merged records are the one-process schedule on the
// reference clock, every arrival due before the end of the load once, at its time to the
// nanosecond; the window starts at the scheduled end of warmup; the send times are fitted.
func TestMergeRealRateShards(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := sweep.Protocol{Warmup: 300 * time.Millisecond, Duration: 500 * time.Millisecond, MaxDuration: 500 * time.Millisecond,
		MinRequests: 1, CITarget: 0.05, DrainTimeout: 300 * time.Millisecond, ArrivalSeed: 5, MaxConcurrency: 16, Mode: record.ModeRate}
	const rate, skew = 100, 50 * time.Millisecond
	arrival := proto.ArrivalOf(1)
	srv, addr := clockServer(t)
	// Shard 1 reads its clock from 100 ms (the clock's lead) + skew before its start on the
	// reference clock: the start leaves it 350 ms for the clients, goroutines and 8
	// exchanges to set up, which a loaded 2-core machine under -race needs (at 200 ms a
	// 60 ms stall failed the reading).
	start := time.Now().Add(500 * time.Millisecond)
	parts := runShardPlans(t, url, 2, proto, start, func(i int) sweep.Plan {
		s := &sweep.Schedule{Start: start, Shard: i, Shards: 2, Skew: time.Duration(i) * skew}
		opts := clocksync.DefaultOptions()
		opts.Now = func() time.Time { return time.Now().Add(s.Skew) }
		if i == 0 {
			opts.Self = srv.ID // shard 0 serves the clock: the reference
		}
		s.Clock = func(ctx context.Context) record.ClockOffset {
			r, _ := clocksync.Read(ctx, addr, opts)
			return r
		}
		return sweep.Plan{Rates: []float64{rate}, Arrival: arrival, MaxConcurrency: proto.MaxConcurrency, Protocol: proto,
			Workload: fixedWorkload{out: 2}, Schedule: s}
	})
	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	for _, w := range warnings {
		// A loaded machine may send late: the fit and the lag may be warned of, nothing else.
		if !strings.Contains(w, "do not fit poisson arrivals") && !strings.Contains(w, "far above the other shards'") {
			t.Errorf("warning: %s", w)
		} else {
			t.Log(w)
		}
	}
	sched := sweep.Schedule{Start: start}
	levelAt := sched.LevelStart(proto, 0).UnixNano()
	w0, w1 := levelAt+int64(proto.Warmup), levelAt+int64(proto.Warmup+proto.MaxDuration)
	gaps := arrival.Gaps(rate, 0)
	var want []int64
	for at := levelAt + int64(gaps()); at < w1; at += int64(gaps()) {
		want = append(want, at)
	}
	l := merged.Levels[0]
	sent := 0
	for _, r := range l.Records {
		if r.Seq >= len(want) || r.Scheduled != want[r.Seq] {
			t.Fatalf("arrival %d scheduled at %d on the reference clock, not the schedule's", r.Seq, r.Scheduled)
		}
		if r.Worker >= 0 {
			sent++
		}
	}
	run := l.Run
	if len(l.Records) != len(want) || run.W0 != w0 || run.OfferedRPS != rate {
		t.Errorf("%d records of %d arrivals, W0 %+d ns from the schedule's, offered %v", len(l.Records), len(want), run.W0-w0, run.OfferedRPS)
	}
	// The skew measured within a millisecond (the acceptance), within the reading's
	// own uncertainty of it.
	if sh := run.Shards; len(sh) != 2 || sh[0].ClockOffset != 0 || sh[0].Requests+sh[1].Requests != sent ||
		time.Duration(max(sh[1].ClockOffset-int64(skew), int64(skew)-sh[1].ClockOffset)) > min(time.Millisecond, time.Duration(sh[1].ClockUncertainty)) {
		t.Errorf("shards %+v, want shard 1's offset %v measured within 1 ms and its uncertainty, and %d sent between them", sh, skew, sent)
	}
	if run.Arrivals == nil || run.Arrivals.Count != sent-1 || run.Arrivals.KSP == nil {
		t.Errorf("arrivals %+v, want %d gaps tested", run.Arrivals, sent-1)
	} else {
		t.Logf("%d arrivals: CV %.3f, KS D %.3f p %.3g; shards %+v", sent, run.Arrivals.CV, *run.Arrivals.KSD, *run.Arrivals.KSP, run.Shards)
	}
	if !strings.Contains(merged.Clocks, "clock offsets +0.000 … +50.0") {
		t.Errorf("clock line %q", merged.Clocks)
	}
}

// clockServer serves this process's clock on a loopback port until the test ends.
func clockServer(t *testing.T) (*clocksync.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := clocksync.NewServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("clock server: %v", err)
		}
	})
	return srv, ln.Addr().String()
}
