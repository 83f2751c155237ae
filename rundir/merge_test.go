package rundir_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
)

// fixedWorkload asks for out tokens, with ignore_eos, in every request.
type fixedWorkload struct{ out int }

func (w fixedWorkload) Next(level, worker, seq int) record.Request {
	return record.Request{Prompt: "count to a hundred, slowly", PromptTokens: 8, MaxTokens: w.out, IgnoreEOS: true}
}

// memSink keeps the levels a sweep hands over.
type memSink struct{ levels []record.Level }

func (s *memSink) LevelDone(l record.Level) error { s.levels = append(s.levels, l); return nil }
func (s *memSink) Finish(string) error            { return nil }

// stopAfter is a Judge that would stop after n levels (a shard must never ask it).
type stopAfter struct{ n int }

func (j *stopAfter) Decide(levels []record.Level) string {
	if len(levels) >= j.n {
		return "plateau: test judge"
	}
	return ""
}

// fastSim serves a fixed-mode engine on a loopback port: E2E = 50 ms + 19 × 10 ms = 240 ms for
// 20 tokens.
func fastSim(t testing.TB) string {
	t.Helper()
	rc, err := sim.Resolve(sim.Config{Profile: sim.ProfileFixed, TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Start(rc, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r.URL
}

// newClient is the real client against url with a pool of maxConns connections.
func newClient(t testing.TB, url string, maxConns int) *openai.Client {
	t.Helper()
	o := openai.DefaultOptions()
	o.BaseURL, o.Model, o.API = url, sim.DefaultModel, record.APIChat
	o.RequestTimeout, o.MaxConns, o.RecordChunks = 30*time.Second, maxConns, true
	c, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func hasNote(run record.LevelRun, sub string) bool {
	return slices.ContainsFunc(run.Notes, func(n string) bool { return strings.Contains(n, sub) })
}

// shardProtocol: 600 ms warmup (first requests spread over 300 ms, then one 240 ms request),
// a window of 1 s to 2 s, a 400 ms drain: one level every 3 s.
func shardProtocol() sweep.Protocol {
	return sweep.Protocol{
		Warmup: 600 * time.Millisecond, Duration: time.Second, MaxDuration: 2 * time.Second,
		MinRequests: 1, CITarget: 0.05, DrainTimeout: 400 * time.Millisecond,
	}
}

// runShards runs a sharded sweep: shards processes' worth of sweep.Run, concurrently, each with
// its own client, against url. It returns each shard's results as a results directory would
// hold them.
func runShards(t *testing.T, url string, levels []int, shards int, proto sweep.Protocol) []*rundir.Run {
	t.Helper()
	start := time.Now().Add(300 * time.Millisecond)
	return runShardPlans(t, url, shards, proto, start, func(i int) sweep.Plan {
		return sweep.Plan{
			Levels: levels, Protocol: proto, Workload: fixedWorkload{out: 20},
			Judge:    &stopAfter{n: 1}, // a shard never consults its judge: every level runs
			Schedule: &sweep.Schedule{Start: start, Shard: i, Shards: shards},
		}
	})
}

// runShardPlans runs shard i's plan(i) for every shard, concurrently, each with its own client
// (8 connections) against url, and returns each shard's results as a results directory would
// hold them, its configuration proto's with the shard section of start.
func runShardPlans(t *testing.T, url string, shards int, proto sweep.Protocol, start time.Time, plan func(i int) sweep.Plan) []*rundir.Run {
	t.Helper()
	parts := make([]*rundir.Run, shards)
	var wg sync.WaitGroup
	for i := range shards {
		sink := &memSink{}
		client := newClient(t, url, 8)
		p := plan(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := sweep.Run(context.Background(), context.Background(), p, client, sink)
			if err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
			cfg := config.Default()
			cfg.Sweep = proto
			cfg.Shard = config.ShardConfig{Index: i, Count: shards, StartAt: start.UTC().Format(time.RFC3339Nano)}
			parts[i] = &rundir.Run{Dir: fmt.Sprintf("shard%d", i), Config: cfg, Start: start,
				Levels: sink.levels, StopReason: out.StopReason}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return parts
}

// TestShardedSweepMerges runs one sweep as two shards against one simulator and merges them:
// the shards keep one schedule (identical windows at the agreed times), each runs its own
// workers, and the merge is the sum of the shards — slice by slice — with every worker of the
// level present. The budget admits three of the four levels on both shards alike.
func TestShardedSweepMerges(t *testing.T) {
	url := fastSim(t) // fixed engine: 20 tokens in 240 ms
	levels := []int{1, 3, 8, 16}
	proto := shardProtocol()
	period := (&sweep.Schedule{}).Period(proto)
	// The third level's load ends at 2 periods + warmup + max_duration; the fourth's a period
	// later, past the budget.
	proto.Stop.Budget = 2*period + proto.Warmup + proto.MaxDuration + period/2
	parts := runShards(t, url, levels, 2, proto)
	levels = levels[:3]
	start := parts[0].Start
	for i, p := range parts {
		if len(p.Levels) != len(levels) || p.StopReason != sweep.StopBudget {
			t.Fatalf("shard %d ran %d levels and stopped on %q, want %d and the budget (a shard must not stop on its judge)",
				i, len(p.Levels), p.StopReason, len(levels))
		}
		for k, run := range p.Runs() {
			levelAt := start.Add(time.Duration(k) * period)
			// A shard loads the server for the longest window; the merge picks the window.
			if want := levelAt.Add(proto.Warmup).UnixNano(); run.W0 != want || run.W1 != want+int64(proto.MaxDuration) {
				t.Errorf("shard %d level %d: window [%d, %d), want [%d, %d): the schedule's", i, k, run.W0, run.W1, want, want+int64(proto.MaxDuration))
			}
			if run.WarmupStart < levelAt.UnixNano()-int64(time.Millisecond) {
				t.Errorf("shard %d level %d started %v before its time", i, k, time.Duration(levelAt.UnixNano()-run.WarmupStart))
			}
			first, n := sweep.Workers(levels[k], i, 2)
			if run.Shard == nil || *run.Shard != (record.ShardPart{Index: i, Count: 2, FirstWorker: first, Workers: n}) {
				t.Errorf("shard %d level %d: part %+v, want workers %d+%d", i, k, run.Shard, first, n)
			}
			if run.Concurrency != levels[k] {
				t.Errorf("shard %d level %d: concurrency %d, want the level's %d", i, k, run.Concurrency, levels[k])
			}
		}
		for _, r := range p.Records() {
			first, n := sweep.Workers(r.Concurrency, i, 2)
			if r.Worker < first || r.Worker >= first+n || !r.OK() {
				t.Fatalf("shard %d: record of worker %d (status %s), want one of %d+%d", i, r.Worker, r.Status, first, n)
			}
		}
	}
	if !hasNote(parts[0].Levels[0].Run, "runs none of the level's 1 workers") {
		t.Errorf("shard 0 at concurrency 1 has no worker, yet no note says so: %q", parts[0].Levels[0].Run.Notes)
	}

	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("merge: %v, warnings %q", err, warnings)
	}
	if merged.Shards != 2 || merged.Config.Shard.Sharded() || len(merged.Levels) != len(levels) || merged.StopReason != sweep.StopBudget {
		t.Fatalf("merged: %d shards, config shard %+v, %d levels, stop %q", merged.Shards, merged.Config.Shard, len(merged.Levels), merged.StopReason)
	}
	tps := make([]float64, len(levels))
	for k, run := range merged.Runs() {
		c := levels[k]
		// The window is chosen as one process would: whole slices, from duration to
		// max_duration, the shortest steady one (or the longest when none is).
		slice := int64(proto.Duration) / record.MinSlices
		win := run.W1 - run.W0
		if run.Shard != nil || run.W0 != parts[0].Levels[k].Run.W0 || win < int64(proto.Duration) || win > int64(proto.MaxDuration) || win%slice != 0 {
			t.Errorf("level %d: merged shard %+v, window [W0, W0+%v)", k, run.Shard, time.Duration(win))
		}
		if !run.Steady && win != int64(proto.MaxDuration) {
			t.Errorf("level %d: not steady, yet the window ended at %v, before max_duration", k, time.Duration(win))
		}
		// Every worker of the level sent requests in the window (a 1 s window, 240 ms requests).
		seen := map[int]bool{}
		for _, r := range merged.Records() {
			if r.Level == k && r.Phase == record.PhaseMeasure {
				seen[r.Worker] = true
			}
		}
		if len(seen) != c {
			t.Errorf("level %d: %d distinct workers sent in the window, want %d", k, len(seen), c)
		}
		// Slice TPS is additive: the shards count disjoint requests over the same slices.
		a, b := parts[0].Levels[k].Run.SliceTPS, parts[1].Levels[k].Run.SliceTPS
		m := run.SliceTPS
		if len(m) != int(win/slice) || len(a) != len(b) || len(m) > len(a) {
			t.Fatalf("level %d: %d merged slices, shards %d and %d", k, len(m), len(a), len(b))
		}
		for j := range m {
			if d := math.Abs(m[j] - (a[j] + b[j])); d > 1e-9*max(1, m[j]) {
				t.Errorf("level %d slice %d: merged %.6f tokens/s, shards %.6f + %.6f", k, j, m[j], a[j], b[j])
			}
			tps[k] += m[j] / float64(len(m))
		}
	}
	// The fixed engine serves every stream at 20 tokens per 240 ms: the merged 8-user level
	// carries about 8 times the 1-user level's throughput (wide bounds for a loaded machine).
	if r := tps[2] / tps[0]; !(r > 5 && r < 10) {
		t.Errorf("merged throughput %.0f at 8 users vs %.0f at 1: ratio %.2f, want about 8", tps[2], tps[0], r)
	}
}

// shardParts builds the results of a sharded sweep without running it: levels of the given
// concurrencies, one record per worker in the middle of the window.
func shardParts(shards int, levels []int) []*rundir.Run {
	proto := shardProtocol()
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	sched := sweep.Schedule{Start: start}
	parts := make([]*rundir.Run, shards)
	for i := range shards {
		cfg := config.Default()
		cfg.Target.URL, cfg.Target.Model = "http://gpu:8000/v1", "m"
		cfg.Sweep = proto
		cfg.Shard = config.ShardConfig{Index: i, Count: shards, StartAt: start.Format(time.RFC3339)}
		res := &rundir.Run{Dir: fmt.Sprintf("runs/s%d", i), Config: cfg, Start: start, StopReason: sweep.StopDone}
		for k, c := range levels {
			w0 := sched.LevelStart(proto, k).Add(proto.Warmup).UnixNano()
			w1 := w0 + int64(proto.MaxDuration)
			first, n := sweep.Workers(c, i, shards)
			l := record.Level{Run: record.LevelRun{
				Index: k, Concurrency: c, WarmupStart: w0 - int64(proto.Warmup), W0: w0, W1: w1,
				DrainEnd: w1 + int64(proto.DrainTimeout),
				Shard:    &record.ShardPart{Index: i, Count: shards, FirstWorker: first, Workers: n},
			}}
			for w := first; w < first+n; w++ {
				l.Records = append(l.Records, record.Record{
					Level: k, Concurrency: c, Worker: w, Sent: w0 + int64(100*time.Millisecond),
					TTFT: 50 * time.Millisecond, E2E: 240 * time.Millisecond, Chunks: []int64{50000, 240000},
					OutputTokens: 2, Status: record.StatusOK,
				})
			}
			res.Levels = append(res.Levels, l)
		}
		parts[i] = res
	}
	return parts
}

// TestMergeRejects: a merge needs every shard of one sweep exactly once; each problem
// is named with the directories concerned.
func TestMergeRejects(t *testing.T) {
	cases := []struct {
		name  string
		parts func() []*rundir.Run
		want  []string
	}{
		{"missing shard", func() []*rundir.Run { return shardParts(3, []int{4})[:2] }, []string{"shard 2/3 missing"}},
		{"duplicate shard", func() []*rundir.Run {
			p := shardParts(2, []int{4})
			return []*rundir.Run{p[0], p[1], p[1]}
		}, []string{"runs/s1 and runs/s1 are both shard 1/2"}},
		{"other sweep", func() []*rundir.Run {
			p := shardParts(2, []int{4})
			p[1].Config.Workload.Seed = 7
			p[1].Config.Sweep.Duration = 2 * time.Second
			return p
		}, []string{"runs/s1: configuration differs from runs/s0's in workload, sweep"}},
		{"other shard count", func() []*rundir.Run {
			p := shardParts(2, []int{4})
			return []*rundir.Run{p[0], shardParts(3, []int{4})[2]}
		}, []string{"runs/s2 is shard 2/3 but runs/s0 is shard 0/2"}},
		{"not a shard", func() []*rundir.Run {
			p := shardParts(2, []int{4})
			p[0].Config.Shard = config.ShardConfig{}
			return p
		}, []string{"runs/s0 is not a shard"}},
		{"other schedule", func() []*rundir.Run {
			p := shardParts(2, []int{4})
			p[1].Levels[0].Run.W0 += int64(time.Second)
			return p
		}, []string{"level 1 (concurrency 4): shard 1/2's window", "not one schedule"}},
		{"no common level", func() []*rundir.Run {
			p := shardParts(2, []int{4})
			p[0].Levels = nil
			return p
		}, []string{"no level was finished by every shard", "shard 0/2: 0 levels, shard 1/2: 1 levels"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := rundir.Merge(context.Background(), tc.parts())
			if err == nil {
				t.Fatal("merged, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestMergePromptSizing: the merge keeps shard 0's prompt sizing and warns when a shard sized
// its prompts otherwise.
func TestMergePromptSizing(t *testing.T) {
	p := shardParts(2, []int{4})
	a := &record.PromptSizing{Method: record.SizingTokenize, Exact: true, TokensPerWord: 1.64, OverheadTokens: 40}
	b := *a
	p[0].PromptSizing, p[1].PromptSizing = a, &b
	merged, warnings, err := rundir.Merge(context.Background(), p)
	if err != nil || len(warnings) != 0 || merged.PromptSizing != a {
		t.Fatalf("alike: sizing %+v, warnings %q, %v", merged.PromptSizing, warnings, err)
	}
	b.TokensPerWord = 1.5
	_, warnings, err = rundir.Merge(context.Background(), p)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "shard 1/2 sized its prompts as tokenize") {
		t.Errorf("unlike: warnings %q, %v", warnings, err)
	}
}

// TestMergeChunkBound: a merged level keeps the tokens-per-chunk bound its shards' usage was
// checked against (levels.json tokens_per_chunk_bound), the most generous when a kneecap before
// one bound for every shard bounded them apart, and a level's records written by a Dir carry
// the bound it was given.
func TestMergeChunkBound(t *testing.T) {
	t.Parallel()
	p := shardParts(2, []int{4})
	p[0].Levels[0].Run.TokensPerChunkBound, p[1].Levels[0].Run.TokensPerChunkBound = 4, record.DefaultTokensPerChunk
	merged, _, err := rundir.Merge(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := merged.Levels[0].Run.TokensPerChunkBound; got != record.DefaultTokensPerChunk {
		t.Errorf("merged bound %d, want the shards' largest %d", got, record.DefaultTokensPerChunk)
	}
	dir := filepath.Join(t.TempDir(), "run")
	d, err := rundir.Create(dir, config.Default(), "http://gpu:8000/v1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d.SetTokensPerChunkBound(12)
	lv := p[0].Levels[0]
	lv.Run.TokensPerChunkBound, lv.Run.Shard = 0, nil
	if err := errors.Join(d.LevelDone(lv), d.Close()); err != nil {
		t.Fatal(err)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Levels[0].Run.TokensPerChunkBound; got != 12 {
		t.Errorf("level written with bound 12 reads back %d", got)
	}
}

// TestMergePartial: a level that one shard did not finish is left out with a warning; a
// level one shard ran interrupted is kept, interrupted (invalid for the analysis).
// onlyLevel is p with level j alone.
func onlyLevel(p *rundir.Run, j int) *rundir.Run {
	q := *p
	q.Levels = p.Levels[j : j+1]
	return &q
}

// TestMergeEndedApart: a level whose shards ended their windows at different moments (the
// server stopped answering, and each shard saw it when its own requests failed) is left out
// with a warning naming the shard that ended first and why; the levels before it merge. So
// is one a shard ended in its warmup (W0 = W1 then, at its own moment). A shard's window that
// ends early, or starts elsewhere, with no recorded death of the server is not one schedule.
func TestMergeEndedApart(t *testing.T) {
	t.Parallel()
	parts := shardParts(2, []int{2, 4})
	l := &parts[1].Levels[1].Run
	l.W1 -= int64(300 * time.Millisecond)
	l.Steady, l.NotSteadyReason = false, "the server did not answer"
	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil {
		t.Fatal(err)
	}
	want := "level 2 (concurrency 4): shard 1/2 ended its window 300ms before shard 0/2 (the server did not answer): the shards ended the level at different moments: left out"
	if len(merged.Levels) != 1 || len(warnings) != 1 || warnings[0] != want {
		t.Errorf("%d levels, warnings %q: want 1 and %q", len(merged.Levels), warnings, want)
	}
	// With no other level, nothing is left to merge.
	if _, _, err := rundir.Merge(context.Background(), []*rundir.Run{onlyLevel(parts[0], 1), onlyLevel(parts[1], 1)}); err == nil ||
		!strings.Contains(err.Error(), "no level could be merged: level 2 (concurrency 4): shard 1/2 ended its window") {
		t.Errorf("only the level ended apart: %v", err)
	}
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		name    string
		edit    func(l *record.LevelRun)
		leftOut bool // left out as ended apart, else refused as not one schedule
	}{
		{"died in the warmup", func(l *record.LevelRun) {
			l.W0 -= 100 * ms
			l.W1, l.NotSteadyReason = l.W0, "the server ignores max_tokens"
		}, true},
		{"ended early, no death recorded", func(l *record.LevelRun) {
			l.W1 -= 300 * ms
			l.NotSteadyReason = "one shard's part of the level: kneecap merge judges the whole"
		}, false},
		{"warmup window, no death recorded", func(l *record.LevelRun) { l.W0 -= 100 * ms; l.W1 = l.W0 }, false},
		{"a moved window start", func(l *record.LevelRun) {
			l.W0 += ms
			l.W1 -= 300 * ms
			l.NotSteadyReason = "the server did not answer"
		}, false},
		{"ended before its level began", func(l *record.LevelRun) {
			l.W0, l.W1, l.NotSteadyReason = l.WarmupStart-ms, l.WarmupStart-ms, "the server did not answer"
		}, false},
	} {
		parts := shardParts(2, []int{2, 4})
		tc.edit(&parts[1].Levels[1].Run)
		merged, warnings, err := rundir.Merge(context.Background(), parts)
		switch {
		case tc.leftOut && (err != nil || len(merged.Levels) != 1 || len(warnings) != 1 ||
			!strings.HasPrefix(warnings[0], "level 2 (concurrency 4): shard 1/2 ended its window 2.1s before shard 0/2 (the server ignores max_tokens)")):
			t.Errorf("%s: %v, warnings %q: want level 2 left out, shard 1/2 named", tc.name, err, warnings)
		case !tc.leftOut && (err == nil || !strings.Contains(err.Error(), "not one schedule")):
			t.Errorf("%s: %v, want not one schedule", tc.name, err)
		}
	}
}

func TestMergePartial(t *testing.T) {
	parts := shardParts(2, []int{2, 4, 8})
	parts[1].Levels = parts[1].Levels[:2]
	parts[1].Levels[1].Run.Interrupted = true
	parts[1].StopReason = sweep.StopInterrupted
	merged, warnings, err := rundir.Merge(context.Background(), parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Levels) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "level 3 (concurrency 8) left out") {
		t.Fatalf("%d levels, warnings %q: want 2 and the third left out", len(merged.Levels), warnings)
	}
	if merged.Levels[0].Run.Interrupted || !merged.Levels[1].Run.Interrupted || merged.Levels[1].Run.Steady {
		t.Errorf("interrupted: %v %v, steady %v: want the second level interrupted and not steady",
			merged.Levels[0].Run.Interrupted, merged.Levels[1].Run.Interrupted, merged.Levels[1].Run.Steady)
	}
	for _, r := range merged.Records() {
		if r.Level == 2 {
			t.Fatal("a record of the left-out level was merged")
		}
	}
	if want := "shard 0/2: " + sweep.StopDone + "; shard 1/2: " + sweep.StopInterrupted; merged.StopReason != want {
		t.Errorf("stop reason %q, want %q", merged.StopReason, want)
	}
	// The left-out level's records are gone, the others' records all kept: 2 + 4 workers.
	if len(merged.Records()) != 6 {
		t.Errorf("%d merged records, want 6", len(merged.Records()))
	}
}

// streamParts builds the shards' results of one level of c workers running back-to-back
// 240 ms requests (20 tokens 10 ms apart after a 50 ms TTFT), worker w starting w·phase after
// the level's start, to the end of the shards' load period (max_duration).
func streamParts(shards, c int, proto sweep.Protocol, phase time.Duration) []*rundir.Run {
	parts := shardParts(shards, []int{c})
	chunks := make([]int64, 20)
	for j := range chunks {
		chunks[j] = int64(50_000 + 10_000*j)
	}
	for _, p := range parts {
		l := p.Levels[0].Run
		p.Config.Sweep = proto
		recs := p.Levels[0].Records[:0]
		for w := l.Shard.FirstWorker; w < l.Shard.FirstWorker+l.Shard.Workers; w++ {
			for s, seq := l.WarmupStart+int64(w)*int64(phase), 0; s < l.W1; s, seq = s+int64(240*time.Millisecond), seq+1 {
				recs = append(recs, record.Record{
					Level: 0, Concurrency: c, Worker: w, Seq: seq, Sent: s,
					TTFT: 50 * time.Millisecond, E2E: 240 * time.Millisecond, Chunks: chunks,
					OutputTokens: 20, Status: record.StatusOK,
				})
			}
		}
		p.Levels[0].Records = recs
	}
	return parts
}

// TestMergeChoosesWindow: the merge ends each window where the one-process controller would:
// the first whole slice from duration on where the union of the shards has min_requests
// completions and passes the steady-state test, among the windows that end before the oldest
// request in flight at the end of the load period (the controller's horizon then); else the
// whole load period, not steady.
func TestMergeChoosesWindow(t *testing.T) {
	const c = 4
	for _, minReq := range []int{1, 30, 32, 1000} {
		proto := shardProtocol()
		proto.MinRequests = minReq
		parts := streamParts(2, c, proto, 60*time.Millisecond)
		merged, _, err := rundir.Merge(context.Background(), parts)
		if err != nil {
			t.Fatal(err)
		}
		run := merged.Levels[0].Run
		slice := int64(proto.Duration) / record.MinSlices
		end := parts[0].Levels[0].Run.W1
		horizon := end
		for _, r := range merged.Records() {
			if r.Sent < end && r.Done() > end {
				horizon = min(horizon, r.Sent)
			}
		}
		// The expected end: the smallest k ≥ 10 slices with minReq completions in [W0, W0+k·slice)
		// (the stream is steady) and W0+k·slice ≤ horizon; else the load period, steady when
		// the whole of it has minReq completions (the verdict is always given on the final
		// window, as one process gives it at max_duration).
		kmax := int(int64(proto.MaxDuration) / slice)
		done := func(k int) int {
			n := 0
			for _, r := range merged.Records() {
				if d := r.Done(); d >= run.W0 && d < run.W0+int64(k)*slice {
					n++
				}
			}
			return n
		}
		want, steady := kmax, done(kmax) >= minReq
		for k := record.MinSlices; run.W0+int64(k)*slice <= horizon; k++ {
			if done(k) >= minReq {
				want, steady = k, true
				break
			}
		}
		if got := int((run.W1 - run.W0) / slice); got != want || (run.W1-run.W0)%slice != 0 {
			t.Errorf("min_requests %d: window of %d slices, want %d", minReq, got, want)
		}
		if run.Steady != steady {
			t.Errorf("min_requests %d: steady %v (%s), want %v", minReq, run.Steady, run.NotSteadyReason, steady)
		}
		if minReq == 30 && (want == record.MinSlices || want == kmax) {
			t.Errorf("min_requests 30 should end the window between duration and max_duration, not at %d slices", want)
		}
	}

	// A warmup too short for the last workers' first requests (worker 3 starts 3 × 200 ms in,
	// at the scheduled window start, and ends 240 ms later; worker 2 ends 40 ms into it): one
	// process would have waited for them, so the merged window starts at the next slice
	// boundary, 300 ms later.
	proto := shardProtocol()
	parts := streamParts(2, c, proto, 200*time.Millisecond)
	merged, _, err := rundir.Merge(context.Background(), parts)
	if err != nil {
		t.Fatal(err)
	}
	run := merged.Levels[0].Run
	if shift := time.Duration(run.W0 - parts[0].Levels[0].Run.W0); shift != 300*time.Millisecond || !hasNote(run, "window starts 300ms after the scheduled end of warmup: 2 of 4 workers") {
		t.Errorf("window starts %v after the scheduled one, notes %q: want 300ms and a note", shift, run.Notes)
	}
	for _, r := range merged.Records() {
		if r.Seq == 0 && r.Phase == record.PhaseMeasure {
			t.Errorf("worker %d's first request is in the window", r.Worker)
		}
	}
	// warmup_max 700 ms (100 ms after the scheduled window start) caps the wait, as one
	// process caps its warmup: by then workers 0, 1 and 2 had completed a request.
	proto.WarmupMax = 700 * time.Millisecond
	parts = streamParts(2, c, proto, 200*time.Millisecond)
	if merged, _, err = rundir.Merge(context.Background(), parts); err != nil {
		t.Fatal(err)
	}
	run = merged.Levels[0].Run
	if shift := time.Duration(run.W0 - parts[0].Levels[0].Run.W0); shift != 100*time.Millisecond ||
		!hasNote(run, "window starts 100ms after the scheduled end of warmup: warmup capped at warmup_max (700ms): 3 of 4 workers had completed a request") {
		t.Errorf("warmup_max: window starts %v after the scheduled one, notes %q: want 100ms and a note", shift, run.Notes)
	}
}
