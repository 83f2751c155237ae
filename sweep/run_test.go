package sweep_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
)

// fixedWorkload asks every request for exactly out tokens (max_tokens + ignore_eos).
type fixedWorkload struct{ out int }

func (w fixedWorkload) Next(level, worker, seq int) record.Request {
	return record.Request{Prompt: "count to a hundred, slowly", PromptTokens: 8, MaxTokens: w.out, IgnoreEOS: true}
}

// memSink keeps what the sweep hands over. Run calls it from one goroutine; the test reads it
// after Run returns.
type memSink struct {
	runs     []record.LevelRun
	records  [][]record.Record
	reasons  []string
	levelErr error
}

func (s *memSink) LevelDone(l record.Level) error {
	s.runs = append(s.runs, l.Run)
	s.records = append(s.records, l.Records)
	return s.levelErr
}

func (s *memSink) Finish(reason string) error {
	s.reasons = append(s.reasons, reason)
	return nil
}

// observer records calls and can act on Live.
type observer struct {
	mu       sync.Mutex
	started  []int
	finished []int
	live     []sweep.LiveStats
	onLive   func(sweep.LiveStats)
}

func (o *observer) LevelStarted(index, concurrency int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = append(o.started, index)
}

func (o *observer) Live(s sweep.LiveStats) {
	o.mu.Lock()
	o.live = append(o.live, s)
	o.mu.Unlock()
	if o.onLive != nil {
		o.onLive(s)
	}
}

func (o *observer) LevelFinished(l record.Level) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = append(o.finished, l.Run.Index)
}

// startSim serves cfg (resolved over its profile) on a loopback port.
func startSim(t testing.TB, cfg sim.Config) (string, sim.Config) {
	t.Helper()
	rc, err := sim.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Start(rc, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r.URL, rc
}

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

// fastSim is a fixed-mode engine with E2E = 50 ms + 19 × 10 ms = 240 ms for 20 tokens.
func fastSim(t testing.TB) string {
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond})
	return url
}

// shortProtocol is a fast level protocol: 240 ms warmup, 1 s window of 10 slices of 100 ms.
func shortProtocol() sweep.Protocol {
	return sweep.Protocol{
		Warmup: 240 * time.Millisecond, WarmupMax: 10 * time.Second,
		Duration: time.Second, MaxDuration: time.Second, MinRequests: 1,
		CITarget: 0.05, DrainTimeout: 10 * time.Second,
	}
}

func hasNote(run record.LevelRun, sub string) bool {
	return slices.ContainsFunc(run.Notes, func(n string) bool { return strings.Contains(n, sub) })
}

// TestLevelsInvariants runs two levels against the fixed-mode simulator and checks the
// protocol's invariants on the records.
func TestLevelsInvariants(t *testing.T) {
	url := fastSim(t)
	levels := []int{2, 8}
	obs := &observer{}
	sink := &memSink{}
	proto := shortProtocol()
	proto.MaxDuration, proto.CITarget = 2*time.Second, 0.1
	plan := sweep.Plan{Levels: levels, Protocol: proto, Workload: fixedWorkload{out: 20}, Observer: obs}
	out, err := sweep.Run(context.Background(), context.Background(), plan, newClient(t, url, 16), sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != sweep.StopDone || out.Interrupted || len(out.Levels) != 2 {
		t.Fatalf("outcome %+v", out)
	}
	if !slices.Equal(sink.reasons, []string{sweep.StopDone}) || len(sink.runs) != 2 {
		t.Fatalf("sink got %d levels, finish %q", len(sink.runs), sink.reasons)
	}
	checkObserver(t, obs, levels)
	for li, run := range sink.runs {
		recs := sink.records[li]
		c := levels[li]
		if run.Index != li || run.Concurrency != c {
			t.Errorf("level %d: index %d concurrency %d", li, run.Index, run.Concurrency)
		}
		if !(run.WarmupStart < run.W0 && run.W0 < run.W1 && run.W1 <= run.DrainEnd) {
			t.Fatalf("level %d: boundaries %d %d %d %d out of order", li, run.WarmupStart, run.W0, run.W1, run.DrainEnd)
		}
		if li > 0 && run.WarmupStart < sink.runs[li-1].DrainEnd {
			t.Errorf("level %d starts before level %d drained", li, li-1)
		}
		inWin := checkLevelRecords(t, run, recs, li, c)
		hand := checkLevelTPS(t, run, recs, li, c)
		checkLevelWindow(t, run, proto, li)
		t.Logf("level %d (c=%d): TPS %.1f (ideal %.1f), achieved concurrency %.3f, window %v, steady %v (ci %.3f, p %.3f), client %+v",
			li, c, hand, float64(c)*20/0.240, record.AchievedConcurrency(recs, run.W0, run.W1), run.Window(), run.Steady, run.CIHalfWidth, run.TrendP, *run.Client)
		if inWin == 0 || run.Client == nil {
			t.Errorf("level %d: %d requests in the window, client stats %v", li, inWin, run.Client)
		}
		if run.Cancelled != 0 {
			t.Errorf("level %d: %d cancelled", li, run.Cancelled)
		}
	}
}

// checkObserver: every level was started and finished in order, and the live numbers during
// windows are in range.
func checkObserver(t *testing.T, obs *observer, levels []int) {
	t.Helper()
	if !slices.Equal(obs.started, []int{0, 1}) || !slices.Equal(obs.finished, []int{0, 1}) {
		t.Errorf("observer started %v finished %v", obs.started, obs.finished)
	}
	measureLive := 0
	for _, l := range obs.live {
		if l.Phase == record.PhaseMeasure {
			measureLive++
			if c := levels[l.Index]; l.InFlight > c || l.OutputTPS < 0 || l.OutputTPS > 2*float64(c)*20/0.240 {
				t.Errorf("live stats %+v out of range", l)
			}
		}
	}
	if measureLive == 0 {
		t.Error("no Live call during a window")
	}
}

// checkLevelRecords: no record crosses the level, phases follow the window, every request
// succeeded with the fixed engine's TTFT and token count, and c requests were in flight. It
// returns how many requests were sent in the window.
func checkLevelRecords(t *testing.T, run record.LevelRun, recs []record.Record, li, c int) (inWin int) {
	t.Helper()
	for _, r := range recs {
		if r.Level != li || r.Concurrency != c {
			t.Fatalf("record of level %d in level %d", r.Level, li)
		}
		if r.Sent < run.WarmupStart || r.Done() > run.DrainEnd {
			t.Fatalf("level %d: record [%d, %d] outside [%d, %d]", li, r.Sent, r.Done(), run.WarmupStart, run.DrainEnd)
		}
		want := record.PhaseDrain
		if r.Sent < run.W0 {
			want = record.PhaseWarmup
		} else if r.Sent < run.W1 {
			want = record.PhaseMeasure
		}
		if r.Phase != want {
			t.Errorf("record sent at W0%+dns has phase %s, want %s", r.Sent-run.W0, r.Phase, want)
		}
		if !r.OK() {
			t.Fatalf("request failed: %s %s", r.ErrorClass, r.Error)
		}
		// The sim sends a role-only chunk first on chat: it must neither set TTFT nor count
		// as content (fixed mode: TTFT = 50 ms, 20 content chunks).
		if r.TTFT < 45*time.Millisecond || len(r.Chunks) != 20 || r.OutputTokens != 20 {
			t.Fatalf("TTFT %v, %d chunks, %d tokens: want ≥ 45 ms, 20, 20", r.TTFT, len(r.Chunks), r.OutputTokens)
		}
		if r.Phase == record.PhaseMeasure {
			inWin++
		}
	}
	// c requests in flight during the window, less the client's turnaround between a
	// request's end and the next send (DESIGN §1 asks 5%; 8% for a loaded machine).
	if ac := record.AchievedConcurrency(recs, run.W0, run.W1); ac > float64(c)*1.0001 || ac < 0.92*float64(c) {
		t.Errorf("level %d: achieved concurrency %.3f, want %d (−8%%)", li, ac, c)
	}
	return inWin
}

// checkLevelTPS: output TPS counts only in-window tokens (a hand computation from the chunk
// times), the slices average to it, and it is near the fixed engine's c·20/0.24 s. It returns
// the hand-computed TPS.
func checkLevelTPS(t *testing.T, run record.LevelRun, recs []record.Record, li, c int) float64 {
	t.Helper()
	var tokens float64
	for _, r := range recs {
		per := float64(r.OutputTokens) / float64(len(r.Chunks))
		for _, us := range r.Chunks {
			if at := r.Sent + us*1000; at >= run.W0 && at < run.W1 {
				tokens += per
			}
		}
	}
	hand := tokens / time.Duration(run.W1-run.W0).Seconds()
	var sliceSum float64
	for _, v := range run.SliceTPS {
		sliceSum += v
	}
	if got := record.LevelOutputTPS(recs, run.W0, run.W1); !scalar.EqualWithinRel(got, hand, 1e-9) {
		t.Errorf("level %d: LevelOutputTPS %.3f, hand computation %.3f", li, got, hand)
	}
	if mean := sliceSum / float64(len(run.SliceTPS)); !scalar.EqualWithinRel(mean, hand, 1e-9) {
		t.Errorf("level %d: mean slice TPS %.3f, hand computation %.3f", li, mean, hand)
	}
	// Fixed mode: each worker makes 20 tokens per 240 ms cycle, less client overhead (and
	// a window edge's part of a token stream: +3%).
	if ideal := float64(c) * 20 / 0.240; hand > 1.03*ideal || hand < 0.85*ideal {
		t.Errorf("level %d: TPS %.1f, want c·20/0.24 s = %.1f (−15%%/+3%%)", li, hand, ideal)
	}
	return hand
}

// checkLevelWindow: the window is a whole number of 100 ms slices, from 10 (duration) to 20
// (max duration); it ends early only with a steady verdict that the final data confirm.
func checkLevelWindow(t *testing.T, run record.LevelRun, proto sweep.Protocol, li int) {
	t.Helper()
	slice := proto.Duration / record.MinSlices
	if run.Slices < 10 || run.Slices > 20 || len(run.SliceTPS) != run.Slices || run.Window() != time.Duration(run.Slices)*slice {
		t.Errorf("level %d: %d slices over %v", li, run.Slices, run.Window())
	}
	// A steady verdict is the steady-state test passing on the level's own slices.
	if _, _, ok := record.SteadyState(run.SliceTPS, proto.CITarget); run.Steady && (!ok || run.CIHalfWidth > proto.CITarget) {
		t.Errorf("level %d: steady with ci %.3f, trend p %.3f, but its slices fail the test", li, run.CIHalfWidth, run.TrendP)
	}
	if !run.Steady && run.Window() != proto.MaxDuration {
		t.Errorf("level %d: not steady but the window stopped at %v (notes %q)", li, run.Window(), run.Notes)
	}
}

// TestTPOTAtConcurrencyOne checks TPOT against the batching engine's step time at batch 1.
func TestTPOTAtConcurrencyOne(t *testing.T) {
	url, cfg := startSim(t, sim.Config{Profile: sim.ProfileDemo})
	step := cfg.StepTime(1, 0) // demo profile: 4 ms + 250 µs
	plan := sweep.Plan{Levels: []int{1}, Protocol: shortProtocol(), Workload: fixedWorkload{out: 40}}
	plan.Protocol.Warmup = 0
	sink := &memSink{}
	if _, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 4), sink); err != nil {
		t.Fatal(err)
	}
	var tpot []float64
	for _, r := range sink.records[0] {
		if r.Phase == record.PhaseMeasure && r.OK() && r.OutputTokens > 1 {
			tpot = append(tpot, float64(r.E2E-r.TTFT)/float64(r.OutputTokens-1))
		}
	}
	if len(tpot) < 3 {
		t.Fatalf("%d measured requests", len(tpot))
	}
	sort.Float64s(tpot)
	med := time.Duration(tpot[len(tpot)/2])
	t.Logf("TPOT p50 at c=1: %v over %d requests (step time %v)", med, len(tpot), step)
	// Never below the step (the engine's schedule is absolute); above it by the turnaround
	// of a loaded machine: −5%/+15%.
	if r := float64(med) / float64(step); r < 0.95 || r > 1.15 {
		t.Errorf("TPOT p50 at c=1 = %v, want the step time %v (−5%%/+15%%)", med, step)
	}
}

// TestArticleWorkedExample reproduces the article's worked example: TTFT 300 ms, ITL 50 ms,
// 100 tokens, so E2E = 0.3 + 99 × 0.05 = 5.25 s; at c = 20, output TPS = 20 × 100 / 5.25 ≈ 381
// and QPS = 20 / 5.25 ≈ 3.81 (Little's law). One of the package's slow tests (~25 s: a window of two
// request cycles, mostly waiting); -short skips it.
func TestArticleWorkedExample(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 10.5 s window")
	}
	// Parallel: its 26 s are waits on a slow engine (20 streams at 50 ms a token), which the
	// package's other tests can use; E2E is read to ±3% of 5.25 s, far above their effect.
	t.Parallel()
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileSeedArticle})
	proto := sweep.Protocol{
		Warmup: 5250 * time.Millisecond, WarmupMax: time.Minute,
		Duration: 10500 * time.Millisecond, MaxDuration: 10500 * time.Millisecond,
		CITarget: 0.05, DrainTimeout: 30 * time.Second,
	}
	plan := sweep.Plan{Levels: []int{20}, Protocol: proto, Workload: fixedWorkload{out: 100}}
	sink := &memSink{}
	if _, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 32), sink); err != nil {
		t.Fatal(err)
	}
	run, recs := sink.runs[0], sink.records[0]
	var e2e []float64
	for _, r := range recs {
		if r.Phase == record.PhaseMeasure && r.OK() {
			e2e = append(e2e, r.E2E.Seconds())
		}
	}
	sort.Float64s(e2e)
	if len(e2e) == 0 {
		t.Fatal("no measured requests")
	}
	t.Logf("E2E p50 %.3f s, TPS %.1f, QPS %.3f, steady %v (ci %.4f, p %.3f)", e2e[len(e2e)/2],
		record.LevelOutputTPS(recs, run.W0, run.W1), record.WindowQPS(recs, run.W0, run.W1), run.Steady, run.CIHalfWidth, run.TrendP)
	if p50 := e2e[len(e2e)/2]; !scalar.EqualWithinRel(p50, 5.25, 0.03) {
		t.Errorf("E2E p50 = %.3f s, want 5.25 s ± 3%%", p50)
	}
	if tps := record.LevelOutputTPS(recs, run.W0, run.W1); !scalar.EqualWithinRel(tps, 20*100/5.25, 0.05) {
		t.Errorf("output TPS = %.1f, want 381 ± 5%%", tps)
	}
	if qps := record.WindowQPS(recs, run.W0, run.W1); !scalar.EqualWithinRel(qps, 20/5.25, 0.05) {
		t.Errorf("QPS = %.3f, want 3.81 ± 5%%", qps)
	}
	if !run.Steady {
		t.Errorf("level not steady: ci %.3f, trend p %.3f, notes %q", run.CIHalfWidth, run.TrendP, run.Notes)
	}
}

// TestInterruptMidLevel interrupts the second level during its window: Run stops issuing,
// drains, and hands the partial level to the sink flagged Interrupted.
func TestInterruptMidLevel(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	interrupt, stop := context.WithCancel(context.Background())
	defer stop()
	obs := &observer{onLive: func(s sweep.LiveStats) {
		if s.Index == 1 && s.Phase == record.PhaseMeasure {
			stop()
		}
	}}
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration = 3*time.Second, 3*time.Second
	plan := sweep.Plan{Levels: []int{2, 4, 8}, Protocol: proto, Workload: fixedWorkload{out: 20}, Observer: obs}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), interrupt, plan, newClient(t, url, 16), sink)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || out.Cancelled || out.StopReason != sweep.StopInterrupted {
		t.Fatalf("outcome %+v", out)
	}
	if len(sink.runs) != 2 || !slices.Equal(sink.reasons, []string{sweep.StopInterrupted}) {
		t.Fatalf("sink got %d levels, finish %q", len(sink.runs), sink.reasons)
	}
	if sink.runs[0].Interrupted || !sink.runs[0].Steady && sink.runs[0].Slices == 0 {
		t.Errorf("first level: %+v", sink.runs[0])
	}
	run := sink.runs[1]
	if !run.Interrupted || run.Steady || !hasNote(run, "interrupted") {
		t.Errorf("partial level: interrupted %v steady %v notes %q", run.Interrupted, run.Steady, run.Notes)
	}
	if w := run.Window(); w <= 0 || w >= proto.Duration {
		t.Errorf("partial window %v, want in (0, %v)", w, proto.Duration)
	}
	for _, r := range sink.records[1] {
		if r.Status != record.StatusOK {
			t.Errorf("drained request: status %s %s", r.Status, r.Error)
		}
		// One request cycle (240 ms) after the interrupt would be a request issued after it;
		// less is a worker preempted between its stop check and its send.
		if r.Sent > run.W1+int64(240*time.Millisecond) {
			t.Errorf("request sent %v after the interrupt", time.Duration(r.Sent-run.W1))
		}
	}
}

// TestHardCancel cancels ctx during a window: in-flight requests are cancelled, and what was
// measured still reaches the sink.
func TestHardCancel(t *testing.T) {
	t.Parallel()
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 50 * time.Millisecond, ITL: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &observer{onLive: func(s sweep.LiveStats) {
		if s.Phase == record.PhaseMeasure {
			cancel()
		}
	}}
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration = 3*time.Second, 3*time.Second
	plan := sweep.Plan{Levels: []int{4, 8}, Protocol: proto, Workload: fixedWorkload{out: 40}, Observer: obs}
	sink := &memSink{}
	out, err := sweep.Run(ctx, nil, plan, newClient(t, url, 16), sink)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || !out.Cancelled || len(sink.runs) != 1 || !slices.Equal(sink.reasons, []string{sweep.StopInterrupted}) {
		t.Fatalf("outcome %+v, sink %d levels, finish %q", out, len(sink.runs), sink.reasons)
	}
	run := sink.runs[0]
	if !run.Interrupted || run.Cancelled == 0 {
		t.Errorf("interrupted %v, cancelled %d (want > 0: 4 streams of 2 s were in flight)", run.Interrupted, run.Cancelled)
	}
	n := 0
	for _, r := range sink.records[0] {
		if r.Status == record.StatusCancelled {
			n++
		}
	}
	if n != run.Cancelled {
		t.Errorf("%d cancelled records, LevelRun.Cancelled %d", n, run.Cancelled)
	}
}

// TestBudget stops at the time budget: a level that cannot fit is not started, and a level
// running at the deadline is cut.
func TestBudget(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	t.Run("not started", func(t *testing.T) {
		t.Parallel()
		proto := shortProtocol()
		proto.Duration, proto.MaxDuration, proto.CITarget = time.Second, time.Second, 10
		// Level 0 takes ≥ 0.12 + 0.24 s of warmup and a 1 s window (about 1.6 s with its
		// drain); level 1 needs 1.24 s more: at least 2.6 s, over 2.5 s. Level 0 itself is
		// cut only if it takes 2.5 s.
		proto.Stop.Budget = 2500 * time.Millisecond
		plan := sweep.Plan{Levels: []int{2, 2}, Protocol: proto, Workload: fixedWorkload{out: 20}}
		sink := &memSink{}
		out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 4), sink)
		if err != nil {
			t.Fatal(err)
		}
		if out.StopReason != sweep.StopBudget || len(sink.runs) != 1 || !slices.Equal(sink.reasons, []string{sweep.StopBudget}) {
			t.Fatalf("reason %q, %d levels, finish %q", out.StopReason, len(sink.runs), sink.reasons)
		}
		if hasNote(sink.runs[0], "budget") {
			t.Errorf("the first level was not cut: notes %q", sink.runs[0].Notes)
		}
	})
	t.Run("cut", func(t *testing.T) {
		t.Parallel()
		proto := shortProtocol()
		// Never steady (CI target 1e-9), so the level would run to a minute.
		proto.Duration, proto.MaxDuration, proto.CITarget = 500*time.Millisecond, time.Minute, 1e-9
		proto.Stop.Budget = 1500 * time.Millisecond
		plan := sweep.Plan{Levels: []int{2, 4}, Protocol: proto, Workload: fixedWorkload{out: 20}}
		sink := &memSink{}
		start := time.Now()
		out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 4), sink)
		if err != nil {
			t.Fatal(err)
		}
		if out.StopReason != sweep.StopBudget || len(sink.runs) != 1 {
			t.Fatalf("reason %q, %d levels", out.StopReason, len(sink.runs))
		}
		run := sink.runs[0]
		if run.Steady || run.Interrupted || !hasNote(run, "budget") {
			t.Errorf("steady %v interrupted %v notes %q", run.Steady, run.Interrupted, run.Notes)
		}
		if !strings.Contains(run.NotSteadyReason, "steady-state test failed") {
			t.Errorf("not-steady reason %q, want the failed test (CI target 1e-9)", run.NotSteadyReason)
		}
		// The window ends at the deadline: well before MaxDuration.
		if end := time.Unix(0, run.W1).Sub(start); end > 10*time.Second {
			t.Errorf("window ended %v after start", end)
		}
	})
}

// TestNotSteadyReason: a level whose steady-state test passes but whose window ends below
// min_requests is not steady, and says why (the analysis note quotes it, not the test).
func TestNotSteadyReason(t *testing.T) {
	t.Parallel()
	proto := shortProtocol()
	// One stream of 240 ms requests gives about 4 completions in the 1 s window; the CI
	// target 10 (1,000%) makes the test itself pass.
	proto.MinRequests, proto.CITarget = 100, 10
	plan := sweep.Plan{Levels: []int{1}, Protocol: proto, Workload: fixedWorkload{out: 20}}
	sink := &memSink{}
	if _, err := sweep.Run(context.Background(), nil, plan, newClient(t, fastSim(t), 2), sink); err != nil {
		t.Fatal(err)
	}
	run := sink.runs[0]
	if run.Steady || !strings.Contains(run.NotSteadyReason, "below min_requests 100") {
		t.Errorf("steady %v, reason %q; want not steady for too few completions", run.Steady, run.NotSteadyReason)
	}
}

// stopAfter is a Judge that stops once it has seen n levels and records what it saw.
type stopAfter struct {
	n     int
	calls [][]int // level indexes of each call
	recs  []int   // record counts of the first level
}

func (j *stopAfter) Decide(levels []record.Level) string {
	var idx []int
	for _, l := range levels {
		idx = append(idx, l.Run.Index)
	}
	j.calls = append(j.calls, idx)
	j.recs = append(j.recs, len(levels[0].Records))
	if len(levels) >= j.n {
		return "plateau: test judge"
	}
	return ""
}

// TestJudgeStop resumes at level 1 with a finished level 0 and stops on the Judge's word.
func TestJudgeStop(t *testing.T) {
	t.Parallel()
	url := fastSim(t)
	proto := shortProtocol()
	proto.Duration, proto.MaxDuration = 500*time.Millisecond, 500*time.Millisecond
	done := record.LevelRun{Index: 0, Concurrency: 1, Steady: true}
	doneRecs := []record.Record{{Level: 0, Concurrency: 1, Status: record.StatusOK}}
	j := &stopAfter{n: 2}
	plan := sweep.Plan{Levels: []int{1, 2, 4}, Protocol: proto, Workload: fixedWorkload{out: 20},
		StartIndex: 1, Done: []record.Level{{Run: done, Records: doneRecs}}, Judge: j}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 4), sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != "plateau: test judge" || len(out.Levels) != 1 || out.Levels[0].Index != 1 {
		t.Fatalf("outcome %+v", out)
	}
	if len(j.calls) != 1 || !slices.Equal(j.calls[0], []int{0, 1}) || j.recs[0] != 1 {
		t.Errorf("judge saw %v (first level's records %v), want one call with levels [0 1]", j.calls, j.recs)
	}
	if !slices.Equal(sink.reasons, []string{"plateau: test judge"}) {
		t.Errorf("finish %q", sink.reasons)
	}
}

// TestDrainTimeout: streams far longer than the window are cancelled at drain_timeout and
// counted; warmup is capped because no worker can complete a request in time.
func TestDrainTimeout(t *testing.T) {
	t.Parallel()
	// 40 tokens at 100 ms: E2E ≈ 4 s.
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 50 * time.Millisecond, ITL: 100 * time.Millisecond})
	proto := sweep.Protocol{
		Warmup: 0, WarmupMax: 200 * time.Millisecond,
		Duration: 500 * time.Millisecond, MaxDuration: 500 * time.Millisecond,
		CITarget: 0.05, DrainTimeout: 100 * time.Millisecond,
	}
	plan := sweep.Plan{Levels: []int{4}, Protocol: proto, Workload: fixedWorkload{out: 40}}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), nil, plan, newClient(t, url, 8), sink)
	if err != nil {
		t.Fatal(err)
	}
	run, recs := sink.runs[0], sink.records[0]
	if out.StopReason != sweep.StopDone || run.Cancelled != 4 || len(recs) != 4 {
		t.Fatalf("reason %q, cancelled %d of %d records, want 4 of 4", out.StopReason, run.Cancelled, len(recs))
	}
	for _, r := range recs {
		if r.Status != record.StatusCancelled || r.ErrorClass != record.ErrCancelled || r.Phase != record.PhaseWarmup {
			t.Errorf("record: status %s class %s phase %s", r.Status, r.ErrorClass, r.Phase)
		}
	}
	if !hasNote(run, "warmup capped") || !hasNote(run, "cancelled") || run.Steady {
		t.Errorf("steady %v notes %q", run.Steady, run.Notes)
	}
	// The drain took about drain_timeout, not the streams' 4 s.
	if d := time.Duration(run.DrainEnd - run.W1); d > 3*time.Second {
		t.Errorf("drain took %v", d)
	}
}

// TestRunValidates: bad plans are errors, not panics, and the sink is never touched.
func TestRunValidates(t *testing.T) {
	t.Parallel()
	good := sweep.Plan{Levels: []int{1}, Protocol: shortProtocol(), Workload: fixedWorkload{out: 1}}
	client := newClient(t, "http://127.0.0.1:1/v1", 1)
	cases := map[string]func(p *sweep.Plan){
		"empty":        func(p *sweep.Plan) { p.Levels = nil },
		"zero level":   func(p *sweep.Plan) { p.Levels = []int{1, 0} },
		"negative":     func(p *sweep.Plan) { p.Levels = []int{-3} },
		"no workload":  func(p *sweep.Plan) { p.Workload = nil },
		"no duration":  func(p *sweep.Plan) { p.Protocol.Duration = 0 },
		"no ci target": func(p *sweep.Plan) { p.Protocol.CITarget = 0 },
		"start index":  func(p *sweep.Plan) { p.StartIndex = 5 },
		"done index":   func(p *sweep.Plan) { p.StartIndex = -1 },
		"warmup max":   func(p *sweep.Plan) { p.Protocol.WarmupMax = time.Millisecond },
	}
	for name, mod := range cases {
		p := good
		mod(&p)
		sink := &memSink{}
		if _, err := sweep.Run(context.Background(), nil, p, client, sink); err == nil || !strings.HasPrefix(err.Error(), "sweep: ") {
			t.Errorf("%s: err = %v", name, err)
		}
		if len(sink.runs)+len(sink.reasons) != 0 {
			t.Errorf("%s: sink was called", name)
		}
	}
	if _, err := sweep.Run(context.Background(), nil, good, nil, &memSink{}); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := sweep.Run(context.Background(), nil, good, client, nil); err == nil {
		t.Error("nil sink accepted")
	}
}
