package sweep_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// TestRetryExcluded: a level excluded for steadiness — one stream of 240 ms requests in a
// 300 ms window ends with one or two completions, too few to keep it as imprecise (3) — is run
// again once with twice the window (retry_excluded 1), after the planned levels; the retry
// names the level it reruns and supersedes it in the analysis. With retry_excluded 0 it is not.
func TestRetryExcluded(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration, proto.MinRequests = 300*time.Millisecond, 300*time.Millisecond, 50
	for _, retries := range []int{1, 0} {
		proto.RetryExcluded = retries
		plan := sweep.Plan{Levels: []int{1}, Protocol: proto, Workload: fixedWorkload{out: 20}}
		sink := &memSink{}
		out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 2), sink)
		if err != nil {
			t.Fatal(err)
		}
		if retries == 0 {
			if len(sink.runs) != 1 {
				t.Errorf("retry_excluded 0: %d levels ran, want 1", len(sink.runs))
			}
			continue
		}
		if len(sink.runs) != 2 || out.StopReason != sweep.StopDone {
			t.Fatalf("retry_excluded 1: %d levels, stop %q; want the level and one retry", len(sink.runs), out.StopReason)
		}
		first, again := sink.runs[0], sink.runs[1]
		if first.Steady || first.Imprecise || sweep.RetryWhy(&record.Level{Run: first, Records: sink.records[0]}, proto) == "" {
			t.Fatalf("first run: steady %v imprecise %v (%q): want excluded for steadiness", first.Steady, first.Imprecise, first.NotSteadyReason)
		}
		if again.RetryOf == nil || *again.RetryOf != first.Index || again.Index != 1 || again.WindowScale != 2 ||
			again.Concurrency != 1 || !hasNote(again, "run again with 2× the window") ||
			!strings.HasPrefix(again.Retry, "not steady: ") && !strings.HasPrefix(again.Retry, "client-bound: ") {
			t.Errorf("retry %+v: want a retry of level 0 at concurrency 1 with twice the window", again)
		}
		if w := again.Window(); w < 2*proto.Duration || w > 2*proto.MaxDuration+proto.Duration/10 {
			t.Errorf("retry window %v, want 2 × duration %v", w, proto.Duration)
		}
		levels := analysis.Summarize([]record.Level{{Run: first, Records: sink.records[0]}, {Run: again, Records: sink.records[1]}}, analysis.DefaultOptions())
		if !levels[0].Superseded || levels[0].Valid || levels[1].Superseded || levels[1].Retry == "" {
			t.Errorf("analysis: first superseded %v valid %v, retry superseded %v (%q); want the retry to stand for the level",
				levels[0].Superseded, levels[0].Valid, levels[1].Superseded, levels[1].Retry)
		}
		res := analysis.Analyze(levels, analysis.Meta{}, analysis.Options{})
		if n := strings.Count(strings.Join(res.Warnings, "\n"), "level concurrency 1 excluded"); n > 1 {
			t.Errorf("warnings %q: the superseded run is warned about too", res.Warnings)
		}
	}
}

// TestRetryChainAndBudget: with retry_excluded 2 a retry excluded again is run again, each
// retry naming the run it repeats and doubling its window (scales 2, then 4); a retry the
// budget has no room for is not run, and the stop reason says so.
func TestRetryChainAndBudget(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration, proto.MinRequests, proto.RetryExcluded = 300*time.Millisecond, 300*time.Millisecond, 50, 2
	sink := &memSink{}
	plan := sweep.Plan{Levels: []int{1}, Protocol: proto, Workload: fixedWorkload{out: 20}}
	if _, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 2), sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.runs) < 2 || len(sink.runs) > 3 {
		t.Fatalf("%d levels, want the level and one or two retries", len(sink.runs))
	}
	for i := 1; i < len(sink.runs); i++ {
		r := sink.runs[i]
		if r.RetryOf == nil || *r.RetryOf != sink.runs[i-1].Index || r.WindowScale != 1<<i {
			t.Errorf("retry %d: of %v, scale %d; want of level %d, scale %d", i, r.RetryOf, r.WindowScale, sink.runs[i-1].Index, 1<<i)
		}
	}
	if last := sink.runs[len(sink.runs)-1]; len(sink.runs) == 2 && sweep.RetryWhy(&record.Level{Run: last, Records: sink.records[1]}, proto) != "" {
		t.Errorf("one retry, itself excluded (%s), but not run again", last.NotSteadyReason)
	}

	// 500 ms windows within a budget of 1.8 s: the level fits, its retry (warmup and 1 s) not.
	// Requests of 440 ms (40 tokens) end at most twice in a window: excluded, never imprecise.
	proto.Duration, proto.MaxDuration, proto.RetryExcluded, proto.Stop.Budget = 500*time.Millisecond, 500*time.Millisecond, 1, 1800*time.Millisecond
	sink = &memSink{}
	plan.Protocol, plan.Workload = proto, fixedWorkload{out: 40}
	out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 2), sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.runs) != 1 || out.StopReason != sweep.StopDone+"; not retried: stop.budget leaves no time to run concurrency 1 again" {
		t.Errorf("%d levels, stop %q; want one, its retry refused by the budget", len(sink.runs), out.StopReason)
	}
}
