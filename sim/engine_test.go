package sim

import (
	"context"
	"math"
	"testing"
	"time"
)

// loopResult is the outcome of a virtual-time closed loop.
type loopResult struct {
	tps         float64       // output tokens per virtual second, after warmup
	meanTTFT    time.Duration // mean queue wait + first step, after warmup
	preemptions int64
	maxRunning  int
}

// closedLoop drives the engine's step logic in virtual time (no clocks, no goroutines): c
// clients each resubmit the moment their request finishes. The first warm steps are not
// measured.
func closedLoop(t testing.TB, cfg Config, c, prompt, out, warm, steps int) loopResult {
	t.Helper()
	rc, err := Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(rc, nil, time.Now())
	var seq uint64
	var now time.Duration
	sent := map[*request]time.Duration{}
	active := make([]*request, 0, c)
	submit := func() *request {
		seq++
		r := newRequest(seq, prompt, out)
		e.enqueue(r)
		sent[r] = now
		return r
	}
	for range c {
		active = append(active, submit())
	}
	var res loopResult
	var tok0 int64
	var t0 time.Duration
	var ttftSum time.Duration
	var ttftN int
	for i := range warm + steps {
		if i == warm {
			tok0, t0 = e.genTok, now
		}
		now += e.begin()
		res.maxRunning = max(res.maxRunning, len(e.running))
		e.finish()
		for j, r := range active {
			g := r.generated.Load()
			if g == 1 && i >= warm {
				if _, ok := sent[r]; ok {
					ttftSum += now - sent[r]
					ttftN++
					delete(sent, r)
				}
			}
			if g >= int64(r.target) {
				delete(sent, r)
				active[j] = submit()
			}
		}
	}
	res.tps = float64(e.genTok-tok0) / (now - t0).Seconds()
	if ttftN > 0 {
		res.meanTTFT = ttftSum / time.Duration(ttftN)
	}
	res.preemptions = e.preempts
	return res
}

// TestGroundTruthThroughput checks the package doc's formula: TPS(c) = c ÷ t(c) for c ≤ S,
// S ÷ t(S) beyond, when prefill is negligible; and the queue wait (c − S) ÷ S × N × t(S).
func TestGroundTruthThroughput(t *testing.T) {
	cfg := Config{MaxNumSeqs: 8, StepBase: 2 * time.Millisecond, StepPerSeq: 500 * time.Microsecond,
		PrefillTPS: 1e15, OutputDist: outputFixed}
	rc, _ := Resolve(cfg)
	const out = 100
	for _, c := range []int{1, 2, 4, 8, 16, 32} {
		res := closedLoop(t, cfg, c, 10, out, 500, 3000)
		want := rc.IdealTPS(c)
		if math.Abs(res.tps/want-1) > 0.005 {
			t.Errorf("c=%d: TPS %.1f, want %.1f (c÷t(c)) within 0.5%%", c, res.tps, want)
		}
		if res.maxRunning > 8 {
			t.Errorf("c=%d: %d running > S=8", c, res.maxRunning)
		}
		if c > 8 {
			tS := rc.StepTime(8, 0)
			wait := time.Duration(float64(c-8) / 8 * out * float64(tS))
			if want := wait + tS; math.Abs(float64(res.meanTTFT)/float64(want)-1) > 0.05 {
				t.Errorf("c=%d: mean TTFT %v, want (c−S)/S × N × t(S) + t(S) = %v within 5%%", c, res.meanTTFT, want)
			}
		}
	}
}

// TestPrefillSlowsSteps checks the prefill term: mean step = t(c) + (c ÷ N) × P ÷ prefill_tps.
func TestPrefillSlowsSteps(t *testing.T) {
	cfg := Config{MaxNumSeqs: 8, StepBase: 2 * time.Millisecond, StepPerSeq: 500 * time.Microsecond,
		PrefillTPS: 100000, OutputDist: outputFixed}
	rc, _ := Resolve(cfg)
	const c, p, out = 4, 1000, 100
	res := closedLoop(t, cfg, c, p, out, 500, 5000)
	step := rc.StepTime(c, 0).Seconds() + float64(c)/out*p/rc.PrefillTPS
	if want := c / step; math.Abs(res.tps/want-1) > 0.02 {
		t.Errorf("TPS %.1f, want %.1f within 2%%", res.tps, want)
	}
}

// TestPreemptionThroughputFalls: with a small KV cache and preemption, throughput past
// overload falls below the best level; without preemption (reservation) it stays flat.
func TestPreemptionThroughputFalls(t *testing.T) {
	base := Config{MaxNumSeqs: 32, StepBase: 2 * time.Millisecond, StepPerSeq: 250 * time.Microsecond,
		PrefillTPS: 4000, OutputDist: outputFixed, KVCacheTokens: 3000}
	// Each request needs at most 50 + 400 = 450 KV tokens, so 6 fit at full length; slow
	// prefill makes recomputing an evicted request's prompt + generated tokens expensive.
	const p, out = 50, 400
	pre := base
	pre.Preemption = true
	best := 0.0
	for _, c := range []int{2, 4, 6} {
		r := closedLoop(t, pre, c, p, out, 500, 4000)
		if r.preemptions != 0 {
			t.Errorf("c=%d: %d preemptions with room for every request", c, r.preemptions)
		}
		best = max(best, r.tps)
	}
	over := closedLoop(t, pre, 32, p, out, 500, 4000)
	if over.preemptions == 0 || over.tps > 0.9*best {
		t.Errorf("c=32 with preemption: TPS %.1f (best %.1f), %d preemptions; want a fall of > 10%% and preemptions",
			over.tps, best, over.preemptions)
	}
	r6 := closedLoop(t, base, 6, p, out, 500, 4000)
	r32 := closedLoop(t, base, 32, p, out, 500, 4000)
	if r32.preemptions != 0 || math.Abs(r32.tps/r6.tps-1) > 0.05 || r32.maxRunning != 6 {
		t.Errorf("reservation: TPS(32) %.1f vs TPS(6) %.1f, running %d, preemptions %d; want flat, 6, 0",
			r32.tps, r6.tps, r32.maxRunning, r32.preemptions)
	}
	t.Logf("preemption: best TPS(c≤6) %.0f, TPS(32) %.0f with %d preemptions; reservation TPS(6) %.0f TPS(32) %.0f",
		best, over.tps, over.preemptions, r6.tps, r32.tps)
}

// TestFCFSAndChunkedPrefill: admission never skips the queue head, and a long prompt is
// prefilled over ⌈P ÷ max_batched_tokens⌉ steps.
func TestFCFSAndChunkedPrefill(t *testing.T) {
	rc, err := Resolve(Config{MaxNumSeqs: 4, MaxBatchedTokens: 1000, PrefillTPS: 1e6, KVCacheTokens: 10000, StepBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(rc, nil, time.Now())
	big := newRequest(1, 2500, 5)  // reserves 2505
	huge := newRequest(2, 7600, 5) // does not fit beside big
	small := newRequest(3, 10, 5)  // would fit, but must not skip huge
	for _, r := range []*request{big, huge, small} {
		e.enqueue(r)
	}
	d := e.begin()
	if len(e.running) != 1 || e.running[0] != big {
		t.Fatalf("admitted %d requests, want only the head", len(e.running))
	}
	// 1000 tokens of prefill at 1e6 tok/s = 1 ms on top of step_base 1 ms with no producer.
	if want := 2 * time.Millisecond; d != want {
		t.Errorf("step with 1000-token prefill = %v, want %v", d, want)
	}
	e.finish()
	steps := 1
	for big.generated.Load() == 0 {
		e.begin()
		e.finish()
		steps++
	}
	if steps != 3 {
		t.Errorf("2500-token prompt gave its first token after %d steps, want ⌈2500/1000⌉ = 3", steps)
	}
	if len(e.running) != 1 {
		t.Errorf("queue skipped: %d running", len(e.running))
	}
}

// BenchmarkStep measures one engine step (plan + finish) with 256 running sequences.
func BenchmarkStep(b *testing.B) {
	rc, err := Resolve(Config{MaxNumSeqs: 256, StepBase: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	e := newEngine(rc, nil, time.Now())
	for i := range 256 {
		e.enqueue(newRequest(uint64(i+1), 100, math.MaxInt32))
	}
	e.begin()
	e.finish()
	b.ReportAllocs()
	for b.Loop() {
		e.begin()
		e.finish()
	}
}

// TestSnapshotCountsEveryHandover: a request is counted as waiting exactly once at every stage
// between the handler and the waiting queue. The engine goroutine's steps are taken by hand
// here, so each stage is observed in turn: offered (in the channel), taken but not yet
// published (the stage CI once caught, 3 of 4 queued requests shown), published, withdrawn.
func TestSnapshotCountsEveryHandover(t *testing.T) {
	rc, err := Resolve(Config{MaxNumSeqs: 1})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	e := newEngine(rc, stop, time.Now())
	wantWaiting := func(stage string, n int) {
		t.Helper()
		if st := e.snapshot(); st.Waiting != n {
			t.Errorf("%s: snapshot shows %d waiting, want %d", stage, st.Waiting, n)
		}
	}
	ctx := context.Background()
	for i := range 2 {
		if err := e.offer(ctx, stop, newRequest(uint64(i+1), 10, 10)); err != nil {
			t.Fatal(err)
		}
	}
	wantWaiting("in the channel", 2)
	e.drain()
	wantWaiting("taken, not published", 2)
	e.publish()
	wantWaiting("published", 2)
	if e.inbox != 0 {
		t.Errorf("inbox %d after publish, want 0", e.inbox)
	}
	// An offer that cannot be delivered (the engine stopped) is withdrawn.
	full := newEngine(rc, stop, time.Now())
	full.submit = make(chan *request) // nobody receives
	close(stop)
	if err := full.offer(ctx, stop, newRequest(9, 10, 10)); err != errStopped {
		t.Fatalf("offer to a stopped engine: %v, want errStopped", err)
	}
	if st := full.snapshot(); st.Waiting != 0 {
		t.Errorf("withdrawn offer still counted: %d waiting", st.Waiting)
	}
}
