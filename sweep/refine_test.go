package sweep_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// listRefiner adds the levels of add in order, then none; it records the concurrencies of
// the levels it was shown at each call.
type listRefiner struct {
	add   []int
	calls [][]int
}

func (r *listRefiner) Refine(levels []record.Level) (float64, string) {
	var seen []int
	for i, l := range levels {
		run := l.Run
		seen = append(seen, run.Concurrency)
		if len(l.Records) == 0 && run.Refine == "" && !run.Interrupted {
			panic(fmt.Sprintf("level %d handed over without records", i))
		}
	}
	r.calls = append(r.calls, seen)
	if n := len(r.calls) - 1; n < len(r.add) {
		return float64(r.add[n]), fmt.Sprintf("test: add %d", r.add[n])
	}
	return 0, ""
}

func concurrencies(runs []record.LevelRun) []int {
	var cs []int
	for _, r := range runs {
		cs = append(cs, r.Concurrency)
	}
	return cs
}

// TestRefineAfterPlan: added levels run after the planned ones (here after the Judge stopped
// them), at most Refine of them, each marked with its reason and a fresh index, and the stop
// reason stays the Judge's; the Refiner sees every level so far.
func TestRefineAfterPlan(t *testing.T) {
	t.Parallel()
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration = 500*time.Millisecond, 500*time.Millisecond
	ref := &listRefiner{add: []int{3, 1, 2}}
	plan := sweep.Plan{Levels: []int{1, 4, 8}, Protocol: proto, Workload: fixedWorkload{out: 10},
		Judge: &stopAfter{n: 2}, Refiner: ref, Refine: 2}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), nil, plan, newClient(t, fastSim(t), 8), sink)
	if err != nil {
		t.Fatal(err)
	}
	if got := concurrencies(sink.runs); !slices.Equal(got, []int{1, 4, 3, 1}) {
		t.Fatalf("levels %v, want [1 4 3 1] (8 stopped by the judge, two added)", got)
	}
	for i, r := range sink.runs {
		want := ""
		if i >= 2 {
			want = fmt.Sprintf("test: add %d", r.Concurrency)
		}
		if r.Index != i || r.Refine != want || r.Interrupted {
			t.Errorf("level %d: index %d, refine %q, interrupted %v; want index %d, refine %q", i, r.Index, r.Refine, r.Interrupted, i, want)
		}
	}
	if len(ref.calls) != 2 || !slices.Equal(ref.calls[0], []int{1, 4}) || !slices.Equal(ref.calls[1], []int{1, 4, 3}) {
		t.Errorf("refiner calls %v, want [[1 4] [1 4 3]] (the cap of 2 ends the loop, not a third call)", ref.calls)
	}
	if out.StopReason != "plateau: test judge" || !slices.Equal(sink.reasons, []string{"plateau: test judge"}) {
		t.Errorf("stop reason %q, finish %q; want the judge's", out.StopReason, sink.reasons)
	}
}

// TestRefineResume: a resumed sweep whose planned part the Judge had stopped goes straight to
// the added levels (the Judge is asked again over the done levels), and one that already has
// an added level only runs the rest of Refine. Without the Refiner's word (0) nothing is added.
func TestRefineResume(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration = 500*time.Millisecond, 500*time.Millisecond
	rec := func(level, c int) []record.Record {
		return []record.Record{{Level: level, Concurrency: c, Status: record.StatusOK}}
	}
	l0 := record.LevelRun{Index: 0, Concurrency: 1, Steady: true}
	l1 := record.LevelRun{Index: 1, Concurrency: 2, Steady: true}
	added := record.LevelRun{Index: 2, Concurrency: 3, Steady: true, Refine: "test: earlier"}
	cases := []struct {
		name     string
		done     []record.LevelRun
		start    int
		judgeN   int
		add      []int
		want     []int
		refCalls int
		stop     string
	}{
		// The judge stops after 2 levels: level 4 is not run again on resume, and the judge's
		// reason is the sweep's.
		{"judge had stopped", []record.LevelRun{l0, l1}, 2, 2, []int{3}, []int{3}, 2, "plateau: test judge"},
		// The judge would go on: the planned level 4 runs first.
		{"planned levels left", []record.LevelRun{l0, l1}, 2, 9, []int{3}, []int{4, 3}, 2, sweep.StopDone},
		// One added level is done: one more at most, no planned level; the reason the judge
		// gave for the planned levels (it sees those only: 2 of them) is kept.
		{"added level done", []record.LevelRun{l0, l1, added}, 2, 2, []int{5, 6}, []int{5}, 1, "plateau: test judge"},
		{"added level done, planned all run", []record.LevelRun{l0, l1, added}, 3, 9, []int{5}, []int{5}, 1, sweep.StopDone},
		{"nothing to add", []record.LevelRun{l0, l1}, 2, 2, nil, nil, 1, "plateau: test judge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var done []record.Level
			for _, d := range tc.done {
				done = append(done, record.Level{Run: d, Records: rec(d.Index, d.Concurrency)})
			}
			ref := &listRefiner{add: tc.add}
			plan := sweep.Plan{Levels: []int{1, 2, 4}, Protocol: proto, Workload: fixedWorkload{out: 10},
				StartIndex: tc.start, Done: done,
				Judge: &stopAfter{n: tc.judgeN}, Refiner: ref, Refine: 2}
			sink := &memSink{}
			out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 8), sink)
			if err != nil {
				t.Fatal(err)
			}
			if out.StopReason != tc.stop {
				t.Errorf("stop reason %q, want %q", out.StopReason, tc.stop)
			}
			if got := concurrencies(sink.runs); !slices.Equal(got, tc.want) {
				t.Errorf("levels run %v, want %v", got, tc.want)
			}
			for i, r := range sink.runs {
				if r.Index != len(tc.done)+i {
					t.Errorf("level %d has index %d, want %d", i, r.Index, len(tc.done)+i)
				}
			}
			if len(ref.calls) != tc.refCalls {
				t.Errorf("refiner called %d times, want %d", len(ref.calls), tc.refCalls)
			}
		})
	}
}

// TestRefineNotAfterInterrupt: an interrupted sweep adds no level, and a shard cannot refine.
func TestRefineNotAfterInterrupt(t *testing.T) {
	t.Parallel()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	ref := &listRefiner{add: []int{3}}
	plan := sweep.Plan{Levels: []int{1, 4}, Protocol: shortProtocol(), Workload: fixedWorkload{out: 10},
		Refiner: ref, Refine: 2}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), stopped, plan, newClient(t, fastSim(t), 8), sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != sweep.StopInterrupted || len(ref.calls) != 0 {
		t.Errorf("stop %q, refiner calls %v; want interrupted and no call", out.StopReason, ref.calls)
	}
	plan.Schedule = &sweep.Schedule{Start: time.Now().Add(time.Hour), Shard: 0, Shards: 2}
	plan.Protocol.Warmup = time.Second
	if _, err := sweep.Run(context.Background(), nil, plan, newClient(t, "http://127.0.0.1:1/v1", 1), &memSink{}); err == nil {
		t.Error("a shard with a Refiner ran; want an invalid plan")
	}
}

// failRefiner adds one level, then stops adding with a reason.
type failRefiner struct{ calls int }

func (r *failRefiner) Refine([]record.Level) (float64, string) {
	r.calls++
	if r.calls == 1 {
		return 2, "test: add 2"
	}
	return 0, "test: the added level failed"
}

// TestRefineStops: the Refiner's reason to stop adding, and a budget with no room for an
// added level, follow the sweep's own stop reason instead of replacing it; an added level is
// only started when its warmup and duration (after the cooldown) fit the budget.
func TestRefineStops(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration = 500*time.Millisecond, 500*time.Millisecond

	ref := &failRefiner{}
	plan := sweep.Plan{Levels: []int{1}, Protocol: proto, Workload: fixedWorkload{out: 10}, Refiner: ref, Refine: 3}
	out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 4), &memSink{})
	if err != nil {
		t.Fatal(err)
	}
	if want := sweep.StopDone + "; no more levels added: test: the added level failed"; out.StopReason != want || len(out.Levels) != 2 {
		t.Errorf("stop %q after %d levels, want %q after 2", out.StopReason, len(out.Levels), want)
	}

	// The planned level fits a 5 s budget; an added one would need the 10 s cooldown first.
	ref2 := &listRefiner{add: []int{2}}
	proto.Cooldown, proto.Stop.Budget = 10*time.Second, 5*time.Second
	plan = sweep.Plan{Levels: []int{1}, Protocol: proto, Workload: fixedWorkload{out: 10}, Refiner: ref2, Refine: 3}
	sink := &memSink{}
	out, err = sweep.Run(context.Background(), nil, plan, newClient(t, url, 4), sink)
	if err != nil {
		t.Fatal(err)
	}
	if want := sweep.StopDone + "; no more levels added: stop.budget leaves no time for an added level"; out.StopReason != want || len(ref2.calls) != 0 || len(sink.runs) != 1 {
		t.Errorf("stop %q, refiner calls %d, levels %d; want %q, none, 1", out.StopReason, len(ref2.calls), len(sink.runs), want)
	}
}
